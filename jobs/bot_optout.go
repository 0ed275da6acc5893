package jobs

import (
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"funnelchat/models"
)

// asksToOptOut reports whether text asks, in plain language, not to be messaged any more: "please
// stop texting me", "remove me from your list", "no me escribas más", "lasciatemi in pace". A
// message that is a built-in opt-out keyword on its own ("STOP!") counts too.
//
// The approach is a phrase list, not a model: text is split into words (messageWords) after its
// accents are removed (foldAccents), so "não" and the "nao" typed on phones are the same word, and
// then searched for each language's phrases (containsPhrase: consecutive words, each may carry a
// plural -s) and compared whole with its short messages ("please stop", "basta"). Every language's
// lists are tried whatever the contact's language, because a Spanish speaker may write in English.
//
// Phrases name the contact ("me") or the messages, so "stop by tomorrow", "take me to the office",
// "can you remove the fee?" and "I can't stop laughing" do not match. A phrase does not count when a
// negation of its language comes right before it ("please don't remove me", "non voglio
// disiscrivermi") or, in German, "nicht" right after it ("entfernen Sie mich nicht"). The "no" of
// English and Spanish, the Portuguese "não" and the French "non" are not negations here, because
// they also answer "No,": "No, remove me" must opt out, so "no me quiero dar de baja" does too.
//
// When in doubt the phrase counts: revocation of consent by any reasonable means must be honoured
// (FCC, 47 CFR 64.1200), a missed request keeps texting someone who asked us to stop, and a wrong
// one costs the contact a START. So "don't text me the price, call me" opts out: it asks for no
// more texts, whatever else it asks for.
func asksToOptOut(text string) bool {
	if models.ClassifyKeyword(text, nil, nil) == models.KeywordOptOut {
		return true
	}
	words := foldedWords(text)
	if len(words) == 0 {
		return false
	}
	for _, m := range optOutMatchers {
		if m.matches(words) {
			return true
		}
	}
	return false
}

// optOutLanguage is how one language asks to opt out. Phrases and words are written as people write
// them, accents included, and compared as foldedWords; a phrase with an umlaut is compared in the
// "ae", "oe", "ue" spelling of keyboards without umlauts as well ("löschen", "loeschen"). Negations are
// per language, so no phrase of one language may contain a phrase of another (the test checks it):
// Portuguese "remove-me" is left out because it is English "remove me".
type optOutLanguage struct {
	phrases   []string // phrases that opt out anywhere in a message
	messages  []string // short phrases that opt out only as the whole message ("stop it", "basta")
	notBefore []string // words that, right before a phrase, turn it around: negations, "why", "if"
	notAfter  []string // words that turn a phrase around right after it (German "nicht")
}

// optOutLanguages has a list for every language of offlineLanguages (the test checks it).
var optOutLanguages = map[string]optOutLanguage{
	"en": {
		phrases: slices.Concat(
			[]string{
				"stop texting", "stop text me", "stop txting", "stop messaging", "stop message me", "stop contacting me",
				"stop spamming", "stop the message", "stop the text", "stop these message", "stop these text",
				"stop all message", "stop all text", "stop receiving message", "stop receiving text", "stop getting message",
				"stop getting text", "stop receiving these", "stop getting these",
			},
			crossPhrases([]string{"stop sending", "stop sending me"}, []string{"message", "text", "sms", "these"}),
			crossPhrases([]string{"don't", "dont", "do not", "never"},
				[]string{"text me", "txt me", "message me", "msg me", "contact me", "send me any more", "send me anymore"}),
			[]string{
				"no more message", "no more text", "no more sms", "no more texting",
				"remove me", "take me off", "unsubscribe me", "leave me alone", "opt me out", "unsubscribed", "opted out",
				"delete my number", "remove my number", "erase my number", "lose my number",
			},
			crossPhrases([]string{"want to", "wanna", "like to", "wish to", "need to", "how do i", "how to", "how can i", "please", "pls"},
				[]string{"unsubscribe", "opt out", "optout"}),
		),
		messages: []string{
			"please stop", "pls stop", "stop please", "stop pls", "stop it", "stop now", "just stop", "stop stop",
			"stop already", "stop thanks", "stop thank you", "stop sms", "no more", "enough",
		},
		// "don't" is "don", "t" as words.
		notBefore: []string{"not", "t", "dont", "never"},
	},
	"es": {
		phrases: slices.Concat(
			crossPhrases([]string{"deja de", "dejen de", "deje de", "dejes de", "para de", "paren de", "pare de"},
				[]string{"escribirme", "mandarme mensaje", "enviarme mensaje", "contactarme", "molestarme"}),
			crossPhrases([]string{"no me"}, []string{
				"escribas", "escriban", "escriba", "vuelvas a escribir", "vuelvan a escribir", "vuelva a escribir",
				"mandes mensaje", "manden mensaje", "mande mensaje", "envíes mensaje", "envíen mensaje", "envíe mensaje",
				"mandes más", "manden más", "mande más", "envíes más", "envíen más", "envíe más",
				"contactes", "contacten", "contacte", "molestes", "molesten", "moleste",
			}),
			[]string{
				"no más mensaje", "no quiero más mensaje", "no quiero recibir más", "no quiero recibir mensaje",
				"ya no quiero recibir", "no deseo recibir",
			},
			// "sácame de dudas" and "quítame la duda" clear up a doubt, so these need the list.
			crossPhrases([]string{"sácame de", "sáquenme de", "sáqueme de"}, []string{"la lista", "su lista", "tu lista", "sus lista"}),
			[]string{
				"quítame de", "quítenme de", "quíteme de", "bórrame de", "bórrenme de", "bórreme de",
				"elimíname", "elimínenme", "elimíneme", "dame de baja", "denme de baja", "deme de baja", "darme de baja",
				"me quiero dar de baja", "desuscríbeme", "desuscríbanme", "desuscribirme",
				"borra mi número", "borren mi número", "elimina mi número", "eliminen mi número",
				"déjame en paz", "déjenme en paz", "déjeme en paz", "déjame tranquilo", "déjame tranquila",
				"déjenme tranquilo", "déjenme tranquila",
			},
		),
		messages:  []string{"basta", "ya basta", "basta ya", "para", "para ya", "ya para", "no más", "alto"},
		notBefore: []string{"nunca", "jamás"},
	},
	"pt": {
		phrases: slices.Concat(
			crossPhrases([]string{"pare de", "para de", "parem de", "parar de"}, []string{
				"me mandar", "me enviar", "me escrever", "me contatar", "me contactar", "me incomodar", "me perturbar",
				"mandar mensagem", "mandar mensagens", "enviar mensagem", "enviar mensagens",
			}),
			// Not "não me escreve": "por que não me escreve?" asks why we are silent.
			crossPhrases([]string{"não me"}, []string{
				"mande mensagem", "mande mensagens", "mandem mensagem", "mandem mensagens", "mande mais", "mandem mais",
				"envie mensagem", "envie mensagens", "enviem mensagem", "enviem mensagens", "envie mais", "enviem mais",
				"escreva", "escrevam", "contate", "contatem", "contacte", "contactem", "incomode", "incomodem", "perturbe",
			}),
			[]string{
				"não quero receber mensagem", "não quero receber mensagens", "não quero mais receber", "não quero receber mais",
				"não desejo receber", "chega de mensagem", "chega de mensagens",
				"me remova", "me remove", "me removam", "remova-me", "me exclua", "me exclui", "me excluam", "exclua-me",
				"me descadastre", "me descadastra", "me descadastrem", "descadastre-me", "me descadastrar",
				"apague meu número", "apaga meu número", "apaguem meu número", "exclua meu número", "remova meu número",
				"me deixe em paz", "me deixa em paz", "me deixem em paz", "deixe-me em paz",
			},
			// "me tire uma dúvida" and "me tire da dúvida" clear up a doubt, so these need the list.
			crossPhrases([]string{"me tire", "me tira", "me tirem", "tire-me"},
				[]string{"da lista", "dessa lista", "desta lista", "da sua lista", "do cadastro", "do seu cadastro"}),
		),
		messages: []string{
			"para", "pare", "parem", "chega", "chega disso", "para com isso", "pare com isso", "parem com isso",
			"para por favor", "pare por favor", "por favor pare",
		},
		notBefore: []string{"nunca", "jamais"},
	},
	"fr": {
		phrases: slices.Concat(
			crossPhrases([]string{"arrêtez de", "arrête de", "arrêter de", "cessez de", "cesse de"},
				[]string{"m'écrire", "m'envoyer", "me contacter", "me spammer", "me harceler", "m'harceler"}),
			crossPhrases([]string{"arrêtez", "arrête"}, []string{"les messages", "les sms", "vos messages", "vos sms", "tes messages"}),
			[]string{
				"ne m'écrivez plus", "ne m'écris plus", "ne m'envoyez plus", "ne m'envoie plus",
				// With "ne" as well: "ne" before "veux plus recevoir" would turn it around.
				"ne me contactez plus", "ne me contacte plus", "ne plus recevoir", "ne veux plus recevoir", "veux plus recevoir",
				"ne souhaite plus recevoir", "souhaite plus recevoir",
				"ne plus être contacté", "retirez-moi", "retire-moi", "supprimez-moi", "supprime-moi", "enlevez-moi", "enlève-moi",
				"rayez-moi", "effacez mon numéro", "supprimez mon numéro", "retirez mon numéro",
				"désinscrivez-moi", "désinscris-moi", "me désinscrire", "désabonnez-moi", "désabonne-moi", "me désabonner",
				"laissez-moi tranquille", "laisse-moi tranquille", "laissez-moi en paix", "fichez-moi la paix",
				"fiche-moi la paix", "foutez-moi la paix", "fous-moi la paix",
			},
		),
		messages: []string{"arrête", "arrêtez", "arrêtez svp", "arrêtez merci", "stop svp", "stop merci", "stop sms", "ça suffit"},
		// "n'" is "n" as a word.
		notBefore: []string{"ne", "n", "pas", "jamais"},
	},
	"de": {
		phrases: slices.Concat(
			crossPhrases([]string{"auf", "aufhören"}, []string{
				"mir zu schreiben", "mir zu simsen", "mir nachrichten zu schicken", "mir nachrichten zu senden",
				"mir sms zu schicken", "mir sms zu senden", "mich zu kontaktieren", "mich anzuschreiben", "mich zu belästigen",
			}),
			crossPhrases([]string{
				"schreiben sie mir", "schreib mir", "schreibt mir", "schicken sie mir", "schick mir", "senden sie mir", "sende mir",
			}, []string{"nicht mehr", "keine nachrichten", "keine sms"}),
			crossPhrases([]string{"kontaktieren sie mich", "kontaktiere mich", "kontaktiert mich"}, []string{"nicht mehr"}),
			crossPhrases([]string{"bitte"},
				[]string{"keine nachrichten", "keine sms", "nicht mehr kontaktieren", "nicht mehr schreiben", "nicht mehr anschreiben"}),
			// Not "ich melde mich ab" or "mich abmelden" alone: "ich muss mich für morgen abmelden" cancels an
			// appointment.
			crossPhrases([]string{"will", "möchte", "kann ich"}, []string{
				"keine nachrichten", "keine sms", "keine weiteren nachrichten", "mich abmelden", "mich austragen",
			}),
			[]string{
				"entfernen sie mich", "entferne mich", "entfernt mich", "streichen sie mich", "streich mich",
				"nehmen sie mich aus", "nimm mich aus", "nehmt mich aus", "nehmen sie mich von", "nimm mich von",
				"löschen sie mich", "lösch mich", "lösche mich", "löscht mich",
				"löschen sie meine nummer", "lösch meine nummer", "löscht meine nummer", "meine nummer löschen",
				"meine nummer entfernen", "mich aus dem verteiler", "mich aus der liste",
				"mich von der liste", "melden sie mich ab", "meld mich ab", "meldet mich ab", "tragen sie mich aus",
				"trag mich aus", "tragt mich aus", "abbestellen",
				"lass mich in ruhe", "lassen sie mich in ruhe", "lasst mich in ruhe",
			},
		),
		messages: []string{
			"hör auf", "hört auf", "hören sie auf", "aufhören", "bitte aufhören", "stopp", "schluss", "schluss jetzt", "es reicht",
			"keine nachrichten mehr", "keine sms mehr",
		},
		// "warum schreiben Sie mir nicht mehr?" asks why we are silent.
		notBefore: []string{"nicht", "nie", "niemals", "kein", "warum", "wieso", "weshalb"},
		notAfter:  []string{"nicht"},
	},
	"it": {
		phrases: slices.Concat(
			// Not "basta scrivermi": it means "just write to me".
			crossPhrases([]string{"smetti di", "smettete di", "smetta di", "smettila di", "smettetela di", "smettere di"}, []string{
				"scrivermi", "mandarmi", "inviarmi", "contattarmi", "disturbarmi", "mandare messaggi", "inviare messaggi",
			}),
			crossPhrases([]string{"non"}, []string{
				"scrivermi", "scrivetemi", "mi scriva", "mi scrivete", "contattarmi", "contattatemi", "mi contatti",
				"mi contattate", "disturbarmi", "disturbatemi", "mi disturbi",
			}),
			// "non mandarmi il preventivo" is about the quote, not the messages.
			crossPhrases([]string{
				"non mandarmi", "non mandatemi", "non mi mandi", "non mi mandate", "non inviarmi", "non inviatemi", "non mi invii",
				"non mi inviate",
			}, []string{"più", "messaggi", "altri messaggi", "sms"}),
			// "toglimi un dubbio" clears up a doubt, so these need what to take the contact off.
			crossPhrases([]string{"cancellami", "cancellatemi", "mi cancelli", "mi cancellate", "toglimi", "toglietemi", "mi tolga",
				"mi togliete", "eliminami", "eliminatemi", "mi elimini", "mi eliminate"}, []string{"dalla", "dai", "dal", "da"}),
			[]string{
				"rimuovimi", "rimuovetemi", "mi rimuova", "mi rimuovete", "eliminami", "eliminatemi",
				"rimuovete il mio numero", "cancella il mio numero", "cancellate il mio numero", "elimina il mio numero",
				"eliminate il mio numero", "disiscrivimi", "disiscrivetemi", "mi disiscriva", "voglio disiscrivermi",
				"vorrei disiscrivermi", "come disiscrivermi", "voglio cancellarmi", "vorrei cancellarmi",
				"basta messaggi", "niente più messaggi", "non voglio più messaggi", "non voglio più ricevere",
				"non voglio ricevere messaggi", "non desidero ricevere",
				"lasciami in pace", "lasciatemi in pace", "mi lasci in pace", "lasciami stare", "lasciatemi stare", "mi lasci stare",
			},
		),
		messages: []string{
			"basta", "basta così", "basta grazie", "basta per favore", "smettila", "smettetela", "cancellami", "cancellatemi",
			"stop grazie",
		},
		// "perché non mi scrivete più?" asks why we are silent; "se non mi scrivete" is a condition.
		notBefore: []string{"non", "mai", "perché", "se"},
	},
}

// crossPhrases joins every prefix to every suffix with a space: the forms of a verb with the objects it takes.
func crossPhrases(prefixes, suffixes []string) []string {
	out := make([]string, 0, len(prefixes)*len(suffixes))
	for _, p := range prefixes {
		for _, s := range suffixes {
			out = append(out, p+" "+s)
		}
	}
	return out
}

// optOutMatcher is an optOutLanguage as foldedWords, ready to compare with a message's.
type optOutMatcher struct {
	lang                string
	phrases, messages   [][]string
	notBefore, notAfter []string
	// byFirst indexes phrases by their first word, so that a message is compared only with the
	// phrases that can start at each of its words (there are hundreds, and every reply asks).
	byFirst map[string][]int
}

var optOutMatchers = compileOptOut(optOutLanguages)

// compileOptOut turns every language's lists into foldedWords once, rather than on every message.
func compileOptOut(languages map[string]optOutLanguage) []optOutMatcher {
	all := func(list []string) [][]string {
		out := make([][]string, 0, len(list))
		for _, s := range list {
			out = append(out, foldedWords(s))
			if u := umlautSpelling.Replace(s); u != s {
				out = append(out, foldedWords(u))
			}
		}
		return out
	}
	words := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, s := range list {
			out = append(out, foldedWords(s)...)
		}
		return out
	}
	matchers := make([]optOutMatcher, 0, len(languages))
	for lang, l := range languages {
		m := optOutMatcher{
			lang: lang, phrases: all(l.phrases), messages: all(l.messages), notBefore: words(l.notBefore), notAfter: words(l.notAfter),
			byFirst: map[string][]int{},
		}
		for i, p := range m.phrases {
			if len(p) > 0 {
				m.byFirst[p[0]] = append(m.byFirst[p[0]], i)
			}
		}
		matchers = append(matchers, m)
	}
	return matchers
}

// matches reports whether words, a message's foldedWords, are one of m's messages or contain one of
// its phrases without a negation right before or after it.
func (m optOutMatcher) matches(words []string) bool {
	for _, msg := range m.messages {
		if len(msg) == len(words) && containsPhrase(words, msg) {
			return true
		}
	}
	for i, w := range words {
		// containsPhrase lets a word match with a plural -s, so a phrase may start at w or at w
		// without its "s".
		if m.phraseAt(words, i, m.byFirst[w]) {
			return true
		}
		if stem := strings.TrimSuffix(w, "s"); stem != w && m.phraseAt(words, i, m.byFirst[stem]) {
			return true
		}
	}
	return false
}

// phraseAt reports whether one of the phrases numbered candidates starts at words[i] without a negation
// right before or after it.
func (m optOutMatcher) phraseAt(words []string, i int, candidates []int) bool {
	for _, c := range candidates {
		p := m.phrases[c]
		if i+len(p) > len(words) || !containsPhrase(words[i:i+len(p)], p) {
			continue
		}
		if i > 0 && slices.Contains(m.notBefore, words[i-1]) {
			continue
		}
		if j := i + len(p); j < len(words) && slices.Contains(m.notAfter, words[j]) {
			continue
		}
		return true
	}
	return false
}

// foldedWords are the messageWords of s without accents.
func foldedWords(s string) []string {
	return messageWords(foldAccents(s))
}

// umlautSpelling writes German umlauts as keyboards without them do.
var umlautSpelling = strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "Ä", "Ae", "Ö", "Oe", "Ü", "Ue")

// foldAccents removes the accents of s ("não" is "nao", "arrêtez" is "arretez") and writes "ß" as
// "ss", so that phrases match what people type on keyboards without them. German "ö" becomes "o";
// the "oe" that people type as well is a second spelling of each phrase (compileOptOut).
func foldAccents(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	if folded, _, err := transform.String(t, s); err == nil {
		s = folded
	}
	return strings.ReplaceAll(s, "ß", "ss")
}
