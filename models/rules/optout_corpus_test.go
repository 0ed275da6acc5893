package rules

import "testing"

// optOutCorpus is how people ask to stop, and sentences that only look like it ("don't stop", "stop
// by", "can't stop", "non-stop", "bus stop"), in each language of AsksToOptOut. The first four are the
// messages a user reported as answered with a sales push.
var optOutCorpus = []struct {
	lang, text string
	optOut     bool
}{
	{"en", "stop sending me this", true},
	{"en", "STOP sending me this", true},
	{"en", "stop sending this", true},
	{"en", "stop sending me stuff", true},
	{"en", "Please stop sending me these messages", true},
	{"en", "stop texting me", true},
	{"en", "Stop messaging me!!", true},
	{"en", "stop messaging", true},
	{"en", "Can you stop contacting me?", true},
	{"en", "stop emailing me", true},
	{"en", "Stop e-mailing me, thanks", true},
	{"en", "stop sending that please", true},
	{"en", "stop sending me this thank you so much", true},
	{"en", "Stop sending me, I'm not interested", true},
	{"en", "stop sending me all these promos", true},
	{"en", "no more messages please", true},
	{"en", "No more texts", true},
	{"en", "unsubscribe me", true},
	{"en", "quit texting me", true},
	{"en", "More offers? I don't. Stop texting me", true},
	{"en", "don't stop sending me deals", false},
	{"en", "Please don't stop texting me", false},
	{"en", "I'll stop by tomorrow", false},
	{"en", "I can't stop laughing", false},
	{"en", "I can't stop texting my friends about you", false},
	{"en", "you guys are non-stop amazing", false},
	{"en", "Where is the nearest bus stop?", false},
	{"en", "Stop sending me the invoice twice", false},
	{"en", "stop sending the invoice to my old address", false},
	{"en", "I quit sending emails at work", false},

	{"es", "Deja de enviarme esto", true},
	{"es", "deja de mandarme mensajes", true},
	{"es", "Dejen de escribirme por favor", true},
	{"es", "deja de mensajearme", true},
	{"es", "paren de enviarme correos", true},
	{"es", "deja de mandar estas cosas", true},
	{"es", "deja de mandarme eso, gracias", true},
	{"es", "No más mensajes", true},
	{"es", "no mas textos", true},
	{"es", "desuscríbeme", true},
	{"es", "No, deja de escribirme", true},
	{"es", "quiero que dejes de escribirme", true},
	{"es", "no dejes de escribirme", false},
	{"es", "No dejen de mandarme ofertas", false},
	{"es", "pásate por la tienda mañana", false},
	{"es", "no puedo dejar de reír", false},
	{"es", "trabajamos sin parar", false},
	{"es", "estoy en la parada del autobús", false},
	{"es", "deja de mandarme la factura dos veces", false},

	{"pt", "Pare de me mandar isso", true},
	{"pt", "pare de mandar isso", true},
	{"pt", "parem de enviar mensagens", true},
	{"pt", "para de me mandar mensagem", true},
	{"pt", "pare de enviar essas propagandas", true},
	{"pt", "chega de mensagens", true},
	{"pt", "Não quero mais mensagens", true},
	{"pt", "me descadastre", true},
	{"pt", "me desinscreva por favor", true},
	{"pt", "Não, pare de me mandar mensagens", true},
	{"pt", "não pare de me mandar novidades", false},
	{"pt", "Passa aqui amanhã", false},
	{"pt", "não consigo parar de rir", false},
	{"pt", "funciona sem parar", false},
	{"pt", "estou no ponto de ônibus", false},
	{"pt", "pare de mandar a fatura duas vezes", false},

	{"fr", "Arrêtez de m'envoyer ça", true},
	{"fr", "arrêtez d'envoyer ça", true},
	{"fr", "arrête de m'écrire", true},
	{"fr", "Arrêtez de me contacter", true},
	{"fr", "cessez d'envoyer des messages", true},
	{"fr", "Plus de messages svp", true},
	{"fr", "plus de SMS, merci", true},
	{"fr", "désinscrivez-moi", true},
	{"fr", "ne m'envoyez plus de messages", true},
	{"fr", "arretez de me texter", true},
	{"fr", "n'arrêtez pas de m'écrire", false},
	{"fr", "passez me voir demain", false},
	{"fr", "je n'arrive pas à arrêter de rire", false},
	{"fr", "un vol non-stop", false},
	{"fr", "je suis à l'arrêt de bus", false},
	{"fr", "j'ai reçu plus de messages que prévu", false},

	{"de", "Hören Sie auf, mir das zu schicken", true},
	{"de", "hör auf mir nachrichten zu schicken", true},
	{"de", "Hören Sie auf, mir E-Mails zu senden", true},
	{"de", "hör auf, mir zu schreiben", true},
	{"de", "Schicken Sie mir das nicht mehr", true},
	{"de", "Keine Nachrichten mehr, bitte!", true},
	{"de", "bitte keine Werbung", true},
	{"de", "Melden Sie mich ab", true},
	{"de", "hoer auf damit", true},
	{"de", "aufhoeren mich zu kontaktieren", true},
	{"de", "Hören Sie nicht auf, mir zu schreiben", false},
	{"de", "schauen Sie morgen vorbei", false},
	{"de", "ich kann nicht aufhören zu lachen", false},
	{"de", "wir arbeiten nonstop", false},
	{"de", "ich bin an der Bushaltestelle", false},
	{"de", "Warum schreiben Sie mir nicht mehr?", false},
	{"de", "ich bekomme keine Nachrichten mehr", false},

	{"it", "Smettete di mandare questa roba", true},
	{"it", "smettila di scrivermi", true},
	{"it", "smetti di mandarmi messaggi", true},
	{"it", "smettetela di inviare sms", true},
	{"it", "basta messaggi", true},
	{"it", "Basta SMS per favore", true},
	{"it", "niente più email", true},
	{"it", "non voglio più messaggi", true},
	{"it", "disiscrivimi", true},
	{"it", "non mandatemi più messaggi", true},
	{"it", "non smettere di scrivermi", false},
	{"it", "passa da noi domani", false},
	{"it", "non riesco a smettere di ridere", false},
	{"it", "lavoriamo non-stop", false},
	{"it", "sono alla fermata dell'autobus", false},
	{"it", "smettete di mandare la fattura due volte", false},
}

// TestAsksToOptOutCorpus reads the corpus and reports precision (of the messages read as opt-outs, the
// share that are) and recall (of the opt-outs, the share read as such), per language and overall. Any
// miss or false positive fails.
func TestAsksToOptOutCorpus(t *testing.T) {
	type counts struct{ tp, fp, fn, tn int }
	byLang := map[string]*counts{}
	var all counts
	for _, c := range optOutCorpus {
		if byLang[c.lang] == nil {
			byLang[c.lang] = &counts{}
		}
		got := AsksToOptOut(c.text)
		for _, n := range []*counts{byLang[c.lang], &all} {
			switch {
			case got && c.optOut:
				n.tp++
			case got:
				n.fp++
			case c.optOut:
				n.fn++
			default:
				n.tn++
			}
		}
		switch {
		case c.optOut && !got:
			t.Errorf("%s: missed opt-out %q", c.lang, c.text)
		case !c.optOut && got:
			t.Errorf("%s: %q read as an opt-out", c.lang, c.text)
		}
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	report := func(name string, n counts) {
		t.Logf("%-3s %3d opt-outs, %3d others: precision %.3f, recall %.3f (%d missed, %d false positives)",
			name, n.tp+n.fn, n.fp+n.tn, ratio(n.tp, n.tp+n.fp), ratio(n.tp, n.tp+n.fn), n.fn, n.fp)
	}
	for _, lang := range OptOutLanguages() {
		n := byLang[lang]
		if n == nil || n.tp+n.fn < 8 || n.fp+n.tn < 5 {
			t.Errorf("%s: the corpus has too few messages in this language: %+v", lang, n)
			continue
		}
		report(lang, *n)
	}
	report("all", all)
	if all.tp+all.fn < 60 || all.fp+all.tn < 30 {
		t.Errorf("the corpus has %d opt-outs and %d others, want at least 60 and 30", all.tp+all.fn, all.fp+all.tn)
	}
}
