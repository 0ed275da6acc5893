package rules

import (
	"slices"
	"strings"
	"testing"
)

func TestAsksToOptOutPositives(t *testing.T) {
	for lang, texts := range map[string][]string{
		"keywords": {"STOP", "Stop!", "unsubscribe.", "Opt-Out", "\"stop\""},
		"en": {
			"Please stop texting me", "STOP TEXTING ME!!", "stop messaging me", "Stop sending me messages",
			"stop sending texts to this number", "Don't text me", "don’t text me again", "dont message me",
			"Do not text me", "do not contact me anymore", "Never text me again", "No more messages please",
			"no more texts", "Remove me from your list", "please take me off your list", "Unsubscribe me",
			"leave me alone", "Opt me out", "I want to unsubscribe", "how do I opt out?", "I unsubscribed last week",
			"delete my number", "please stop", "Stop it", "Why don't you stop texting me?",
			// The contact asks for no more texts, whatever else it asks for (see AsksToOptOut).
			"don't text me the price, call me",
		},
		"es": {
			"Deja de escribirme", "dejen de mandarme mensajes", "por favor no me escribas más", "No me escriban",
			"no me manden más mensajes", "No me envíen mensajes", "no me envien mensajes", "Sácame de la lista",
			"sacame de la lista", "sáquenme de su lista por favor", "quítenme de esta lista", "Elimíname", "eliminame",
			"dame de baja", "Quiero darme de baja", "me quiero dar de baja", "déjame en paz", "dejame en paz",
			"Basta", "ya basta", "no más", "no mas", "No quiero recibir más mensajes",
		},
		"pt": {
			"Pare de me mandar mensagem", "para de me mandar mensagens", "Não me mande mais mensagens",
			"nao me mande mais mensagens", "não me escreva", "nao me escreva mais", "Me remova da lista",
			"me remove", "Me tira da lista", "me tire dessa lista por favor", "me exclua", "Me descadastre",
			"quero me descadastrar", "não quero mais receber", "nao quero mais receber", "me deixe em paz",
			"Chega", "pare", "chega de mensagens", "Não, me remova",
		},
		"fr": {
			"Arrêtez de m'écrire", "arretez de m’ecrire", "arrête de m'envoyer des messages", "Ne m'écrivez plus",
			"ne m'ecrivez plus", "ne me contactez plus", "Je ne veux plus recevoir de messages",
			"je veux plus recevoir vos sms", "Retirez-moi de votre liste", "retirez moi", "désinscrivez-moi",
			"desinscrivez moi", "Comment me désabonner ?", "laissez-moi tranquille", "Arrêtez !", "stop svp",
			"ça suffit", "ca suffit", "Non, retirez-moi",
		},
		"de": {
			"Hören Sie auf, mir zu schreiben", "hoeren sie auf mir zu schreiben", "hör auf mir nachrichten zu schicken",
			"Schreiben Sie mir nicht mehr", "schreib mir keine Nachrichten", "Bitte keine SMS", "Entfernen Sie mich",
			"entfernen sie mich bitte aus dem Verteiler", "Löschen Sie meine Nummer", "loeschen sie meine nummer",
			"loschen sie meine nummer", "melden Sie mich ab", "Ich möchte mich abmelden", "ich moechte mich abmelden",
			"wie kann ich mich abmelden?", "Lassen Sie mich in Ruhe", "Hör auf!", "hoer auf", "aufhören", "aufhoeren", "Schluß", "schluss",
			"keine Nachrichten mehr", "ich will keine Nachrichten mehr",
		},
		"it": {
			"Smettete di scrivermi", "smettila di mandarmi messaggi", "Non scrivetemi più", "non scrivetemi piu",
			"non mi mandate più messaggi", "non mi mandate piu", "Rimuovimi", "Cancellatemi dalla lista",
			"toglimi dalla vostra lista", "mi elimini dai contatti", "disiscrivimi", "vorrei disiscrivermi",
			"lasciatemi in pace", "basta messaggi", "niente più messaggi", "niente piu messaggi", "Basta!", "smettila",
		},
	} {
		for _, text := range texts {
			if !AsksToOptOut(text) {
				t.Errorf("%s: AsksToOptOut(%q) = false, want true", lang, text)
			}
		}
	}
}

func TestAsksToOptOutNegatives(t *testing.T) {
	for _, text := range []string{
		"", "   ", "!!!", "Hello", "What does it cost?",
		// Words of the phrases, in other senses.
		"can you remove the fee?", "take me to the office", "stop by tomorrow", "I can't stop laughing",
		"the bus doesn't stop here", "can you text me the address?", "don't forget to text me the address",
		"please send me more messages about the offer", "Stop sending me the invoice twice",
		"I want to start", "Can I cancel my appointment?",
		// Negated requests.
		"please don't remove me from the list", "Do not take me off the list!", "I don't want to unsubscribe",
		"please don't stop texting me", "I never unsubscribed", "I can't stop texting",
		"no me molesta", "¿por qué no me escribes?", "Sácame de dudas", "quítame la duda",
		"Me tire uma dúvida", "por que não me escreve?",
		"je ne veux pas me désabonner", "Pourquoi ne m'écrivez-vous plus ?",
		"Entfernen Sie mich nicht", "Ich möchte mich nicht abmelden", "Warum schreiben Sie mir nicht mehr?",
		"ich muss mich für morgen abmelden",
		"Perché non mi scrivete più?", "se non mi scrivete entro domani chiamo", "non voglio disiscrivermi",
		"toglimi un dubbio", "basta scrivermi su WhatsApp", "non mandarmi il preventivo, chiamami",
		// Short messages count only as the whole message.
		"para mañana", "basta con un clic", "stop it from happening", "enough time?",
	} {
		if AsksToOptOut(text) {
			t.Errorf("AsksToOptOut(%q) = true, want false", text)
		}
	}
}

// Every language has opt-out lists, and every phrase, ending and message of them opts out on its own:
// none folds to no words, and none is turned around by a negation or a keep of its own. (That the
// offline bot writes no language without lists is the jobs package's test.)
func TestOptOutPhraseLists(t *testing.T) {
	for lang, l := range optOutLanguages {
		if len(l.phrases) == 0 || len(l.messages) == 0 {
			t.Errorf("%s: no phrases or no messages", lang)
		}
		if len(l.endings) > 0 && len(l.fillers) == 0 {
			t.Errorf("%s: endings without fillers", lang)
		}
		for _, s := range slices.Concat(l.phrases, l.endings, l.messages) {
			if len(words(s)) == 0 {
				t.Errorf("%s: %q has no words", lang, s)
			}
			if !AsksToOptOut(s) {
				t.Errorf("%s: AsksToOptOut(%q) = false, want true", lang, s)
			}
		}
	}
}

// The negations that turn a phrase around are its language's, so the same words must not be a phrase
// (or an ending) of two languages: "please don't remove me" would opt out through a Portuguese
// "remove-me".
func TestOptOutPhrasesDoNotOverlap(t *testing.T) {
	for _, a := range optOutMatchers {
		for _, b := range optOutMatchers {
			if a.lang == b.lang {
				continue
			}
			for _, p := range a.phrases {
				for i := range p.words {
					b.tree.found(p.words, i, func(end int, _ bool) bool {
						t.Errorf("%s phrase %q contains %s phrase %q", a.lang, p.words, b.lang, p.words[i:end])
						return true
					})
				}
			}
		}
	}
}

func TestOptOutFoldAccents(t *testing.T) {
	for in, want := range map[string]string{
		"não": "nao", "Arrêtez": "Arretez", "déjame": "dejame", "più": "piu", "Schluß": "Schluss",
		"löschen": "loschen", "ça": "ca", "stop": "stop", "": "",
	} {
		if got := foldAccents(in); got != want {
			t.Errorf("foldAccents(%q) = %q, want %q", in, got, want)
		}
	}
}

// The tree must answer exactly as trying every phrase at every word (the matcher before the tree),
// including words matched through their plural -s. The texts are built from a sample of
// the phrases and endings (every 41st: the crossed lists run to thousands, and the scan tries them all
// on every text).
func TestOptOutTreeMatchesEveryPhraseScan(t *testing.T) {
	skipUnderRace(t)
	scan := func(m optOutMatcher, msg message) bool {
		for _, whole := range m.messages {
			if len(whole) == len(msg.words) && phraseAt(msg.words, 0, whole) {
				return true
			}
		}
		for i := range msg.words {
			for _, p := range m.phrases {
				if phraseAt(msg.words, i, p.words) && m.counts(msg, i, p) {
					return true
				}
			}
		}
		return false
	}
	var texts []string
	for _, m := range optOutMatchers {
		for n, p := range m.phrases {
			if n%41 != 0 {
				continue
			}
			phrase := strings.Join(p.words, " ")
			texts = append(texts, phrase, "please "+phrase+" now", "I do not "+phrase, phrase+" nicht", phrase+", thanks",
				phrase+" the invoice", strings.Join(append([]string{p.words[0] + "s"}, p.words[1:]...), " "),
				"hello "+strings.Join(p.words[:len(p.words)-1], " "))
		}
	}
	texts = append(texts, "", "stop", "stops texting me", "what are your prices", "don't stop texting me")
	hits := 0
	for _, text := range texts {
		msg := readMessage(text)
		for _, m := range optOutMatchers {
			want := scan(m, msg)
			if got := m.matches(msg); got != want {
				t.Fatalf("%s: matches(%q) = %v, the scan over every phrase says %v", m.lang, text, got, want)
			}
			if want {
				hits++
			}
		}
	}
	if hits < len(texts)/2 {
		t.Fatalf("only %d of %d texts opt out: the comparison checks too little", hits, len(texts))
	}
	t.Logf("%d texts compared", len(texts))
}

func TestReadMessage(t *testing.T) {
	for _, tt := range []struct {
		text  string
		words []string
		ends  []bool
	}{
		{"", nil, nil},
		{"STOP sending me this", []string{"stop", "sending", "me", "this"}, []bool{false, false, false, true}},
		{"Stop sending me, I'm not interested!", []string{"stop", "sending", "me", "i", "m", "not", "interested"},
			[]bool{false, false, true, false, false, false, true}},
		// Apostrophes and dashes join; emoji and line breaks end a sentence; accents go.
		{"don't non-stop 🙄 Arrêtez\nça", []string{"don", "t", "non", "stop", "arretez", "ca"}, []bool{false, false, false, true, true, true}},
		{"¿No? ¡Déjame en paz!", []string{"no", "dejame", "en", "paz"}, []bool{true, false, false, true}},
	} {
		got := readMessage(tt.text)
		if !slices.Equal(got.words, tt.words) || !slices.Equal(got.ends, tt.ends) {
			t.Errorf("readMessage(%q) = %q %v, want %q %v", tt.text, got.words, got.ends, tt.words, tt.ends)
		}
	}
}
