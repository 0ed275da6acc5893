package rules

import (
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// AsksToOptOut reports whether text asks, in plain language, not to be messaged any more: "please
// stop texting me", "stop sending me this", "remove me from your list", "no me escribas más",
// "lasciatemi in pace". A message that is a built-in opt-out keyword on its own ("STOP!") counts too.
// It is what the offline bot obeys, and what a report can use to tell an opt-out from a reply.
//
// The approach is a phrase list, not a model: text is split into words (readMessage) after its accents
// are removed (foldAccents), so "não" and the "nao" typed on phones are the same word, and then
// searched for each language's phrases (consecutive words, each may carry a plural -s), its endings
// (phrases that count only at the end of a sentence: "stop sending me this" opts out, "stop sending
// me the invoice twice" does not) and compared whole with its short messages ("please stop",
// "basta"). Every language's lists are tried whatever the contact's language, because a Spanish
// speaker may write in English. The lists are in optout_phrases.go.
//
// Phrases name the contact ("me") or the messages, so "stop by tomorrow", "take me to the office",
// "can you remove the fee?", "the bus stop" and "I can't stop laughing" do not match. A phrase does
// not count when a negation of its language comes right before it ("please don't stop texting me",
// "non-stop", "non voglio disiscrivermi") or, in German, "nicht" right after it ("entfernen Sie mich
// nicht"), nor when it starts in a request to keep writing of its language ("no dejes de
// escribirme"). The "no" of English and Spanish, the Portuguese "não" and the French "non" are not
// negations on their own, because they also answer "No,": "No, remove me" must opt out, so "no me
// quiero dar de baja" does too.
//
// When in doubt the phrase counts: revocation of consent by any reasonable means must be honoured
// (FCC, 47 CFR 64.1200), a missed request keeps texting someone who asked us to stop, and a wrong
// one costs the contact a START. So "don't text me the price, call me" opts out: it asks for no
// more texts, whatever else it asks for.
func AsksToOptOut(text string) bool {
	if ClassifyKeyword(text, nil, nil) == KeywordOptOut {
		return true
	}
	msg := readMessage(text)
	if len(msg.words) == 0 {
		return false
	}
	for _, m := range optOutMatchers {
		if m.matches(msg) {
			return true
		}
	}
	return false
}

// OptOutLanguages are the languages AsksToOptOut has phrases for, as ISO 639-1 codes, sorted.
func OptOutLanguages() []string {
	return slices.Sorted(maps.Keys(optOutLanguages))
}

// optOutLanguage is how one language asks to opt out. Phrases and words are written as people write
// them, accents included, and compared as the words of readMessage; a phrase with an umlaut is
// compared in the "ae", "oe", "ue" spelling of keyboards without umlauts as well ("löschen",
// "loeschen"). Negations are per language, so no phrase or ending of one language may contain one of
// another (the test checks it): Portuguese "remove-me" is left out because it is English "remove me".
type optOutLanguage struct {
	phrases []string // phrases that opt out anywhere in a message
	// endings opt out at the end of a sentence (before . , ! ? and the like, or the end of the
	// message), with only fillers between: "stop sending me this, please!".
	endings   []string
	fillers   []string // words that may follow an ending ("please", "thanks", "anymore")
	messages  []string // short phrases that opt out only as the whole message ("stop it", "basta")
	notBefore []string // words that, right before a phrase, turn it around: negations, "why", "if"
	notAfter  []string // words that turn a phrase around right after it (German "nicht")
	// keeps ask us to keep writing ("no dejes de"): a phrase or ending that starts inside one, or
	// right after it, in the same sentence, does not count. They are for the negations that
	// notBefore cannot hold because they also mean "No,".
	keeps []string
}

// crossPhrases joins one word (or phrase) of each list, in order and with spaces, in every
// combination: the forms of a verb with the objects it takes. An empty string leaves its list out
// of that combination.
func crossPhrases(lists ...[]string) []string {
	out := []string{""}
	for _, list := range lists {
		next := make([]string, 0, len(out)*len(list))
		for _, prefix := range out {
			for _, s := range list {
				next = append(next, strings.TrimSpace(prefix+" "+s))
			}
		}
		out = next
	}
	return out
}

// message is a message as the opt-out rule reads it: its words, lower case and without accents, and
// for each whether a sentence (or clause) ends after it.
type message struct {
	words []string
	ends  []bool
}

// readMessage splits text into words, runs of letters and digits, without accents (foldAccents) and
// in lower case. A sentence ends at punctuation other than apostrophes and dashes ("don't",
// "non-stop", "retirez-moi" are one clause), at symbols (emoji), at line breaks and at the end.
func readMessage(text string) message {
	var msg message
	s := strings.ToLower(foldAccents(text))
	start := -1 // where the word being read starts, -1 between words
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			msg.words = append(msg.words, s[start:i])
			msg.ends = append(msg.ends, false)
			start = -1
		}
		if n := len(msg.ends); n > 0 && endsSentence(r) {
			msg.ends[n-1] = true
		}
	}
	if start >= 0 {
		msg.words = append(msg.words, s[start:])
		msg.ends = append(msg.ends, false)
	}
	if n := len(msg.ends); n > 0 {
		msg.ends[n-1] = true
	}
	return msg
}

// endsSentence reports whether r closes a sentence or clause for readMessage.
func endsSentence(r rune) bool {
	switch {
	case r == '\'' || r == '’' || r == '‘' || r == '`' || r == '´' || unicode.Is(unicode.Pd, r):
		return false
	case r == '\n' || r == '\r':
		return true
	}
	return unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// words are the words of s as readMessage reads them: how the lists are compared.
func words(s string) []string {
	return readMessage(s).words
}

// sameWord reports whether w, a message's word, is p, a phrase's, or p with a plural -s.
func sameWord(w, p string) bool {
	return w == p || strings.TrimSuffix(w, "s") == p
}

// phraseAt reports whether phrase occurs in words starting at i.
func phraseAt(words []string, i int, phrase []string) bool {
	if i+len(phrase) > len(words) {
		return false
	}
	for j, p := range phrase {
		if !sameWord(words[i+j], p) {
			return false
		}
	}
	return true
}

// optOutPhrase is a phrase or an ending of a language, as words.
type optOutPhrase struct {
	words  []string
	ending bool
}

// optOutMatcher is an optOutLanguage as words, ready to compare with a message's.
type optOutMatcher struct {
	lang                string
	phrases             []optOutPhrase // for the tests: what tree holds
	messages, keeps     [][]string
	fillers             map[string]bool
	notBefore, notAfter []string
	// tree holds the phrases and endings word by word, so that a message is compared at each of its
	// words with the phrases that go on as it does, not with each phrase: the crossed lists run to
	// thousands ("stop sending me" with each object), and every reply asks.
	tree *phraseNode
}

// phraseNode is a word of a phrase (the root is none), the words that may follow it, and whether a
// phrase or an ending ends with it.
type phraseNode struct {
	next           map[string]*phraseNode
	phrase, ending bool
}

func (n *phraseNode) add(p optOutPhrase) {
	for _, w := range p.words {
		if n.next[w] == nil {
			n.next[w] = &phraseNode{next: map[string]*phraseNode{}}
		}
		n = n.next[w]
	}
	n.phrase = n.phrase || !p.ending
	n.ending = n.ending || p.ending
}

// found calls visit with the end (one past the last word) of each phrase or ending of the tree that
// starts at words[i], each word equal or with a plural -s, until visit returns true; found reports
// whether it did.
func (n *phraseNode) found(words []string, i int, visit func(end int, ending bool) bool) bool {
	if n.phrase && visit(i, false) || n.ending && visit(i, true) {
		return true
	}
	if i == len(words) {
		return false
	}
	w := words[i]
	if next := n.next[w]; next != nil && next.found(words, i+1, visit) {
		return true
	}
	if stem := strings.TrimSuffix(w, "s"); stem != w {
		if next := n.next[stem]; next != nil && next.found(words, i+1, visit) {
			return true
		}
	}
	return false
}

var optOutMatchers = compileOptOut(optOutLanguages)

// compileOptOut turns every language's lists into words once, rather than on every message.
func compileOptOut(languages map[string]optOutLanguage) []optOutMatcher {
	all := func(list []string) [][]string {
		out := make([][]string, 0, len(list))
		for _, s := range list {
			out = append(out, words(s))
			if u := umlautSpelling.Replace(s); u != s {
				out = append(out, words(u))
			}
		}
		return out
	}
	flat := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, s := range list {
			out = append(out, words(s)...)
		}
		return out
	}
	matchers := make([]optOutMatcher, 0, len(languages))
	for _, lang := range slices.Sorted(maps.Keys(languages)) {
		l := languages[lang]
		m := optOutMatcher{
			lang: lang, messages: all(l.messages), keeps: all(l.keeps), fillers: map[string]bool{},
			notBefore: flat(l.notBefore), notAfter: flat(l.notAfter), tree: &phraseNode{next: map[string]*phraseNode{}},
		}
		for _, p := range all(l.phrases) {
			m.phrases = append(m.phrases, optOutPhrase{words: p})
		}
		for _, p := range all(l.endings) {
			m.phrases = append(m.phrases, optOutPhrase{words: p, ending: true})
		}
		for _, p := range m.phrases {
			if len(p.words) > 0 {
				m.tree.add(p)
			}
		}
		for _, w := range flat(l.fillers) {
			m.fillers[w] = true
		}
		matchers = append(matchers, m)
	}
	return matchers
}

// matches reports whether msg is one of m's messages or contains one of its phrases or endings where
// it counts (counts).
func (m optOutMatcher) matches(msg message) bool {
	for _, whole := range m.messages {
		if len(whole) == len(msg.words) && phraseAt(msg.words, 0, whole) {
			return true
		}
	}
	for i := range msg.words {
		if m.tree.found(msg.words, i, func(end int, ending bool) bool {
			return end > i && m.counts(msg, i, optOutPhrase{words: msg.words[i:end], ending: ending})
		}) {
			return true
		}
	}
	return false
}

// counts reports whether p, found at msg.words[i], asks to opt out there: no negation right before or
// after it in its sentence ("I don't. Stop texting me" opts out), not inside a request to keep
// writing, and, for an ending, nothing but fillers between it and the end of its sentence.
func (m optOutMatcher) counts(msg message, i int, p optOutPhrase) bool {
	j := i + len(p.words)
	if i > 0 && !msg.ends[i-1] && slices.Contains(m.notBefore, msg.words[i-1]) {
		return false
	}
	if j < len(msg.words) && !msg.ends[j-1] && slices.Contains(m.notAfter, msg.words[j]) {
		return false
	}
	if m.keptFrom(msg, i) {
		return false
	}
	if !p.ending {
		return true
	}
	for !msg.ends[j-1] {
		if !m.fillers[msg.words[j]] {
			return false
		}
		j++
	}
	return true
}

// keptFrom reports whether one of m's keeps starts before msg.words[i] and reaches it, or ends right
// before it, within one sentence.
func (m optOutMatcher) keptFrom(msg message, i int) bool {
	for _, k := range m.keeps {
		for s := max(0, i-len(k)); s < i; s++ {
			if phraseAt(msg.words, s, k) && !slices.Contains(msg.ends[s:i], true) {
				return true
			}
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// umlautSpelling writes German umlauts as keyboards without them do.
var umlautSpelling = strings.NewReplacer("ä", "ae", "ö", "oe", "ü", "ue", "Ä", "Ae", "Ö", "Oe", "Ü", "Ue")

// foldAccents removes the accents of s ("não" is "nao", "arrêtez" is "arretez") and writes "ß" as
// "ss", so that phrases match what people type on keyboards without them. German "ö" becomes "o";
// the "oe" that people type as well is a second spelling of each phrase (compileOptOut).
func foldAccents(s string) string {
	if isASCII(s) {
		return s // nothing to fold, and most messages are: the transformation is most of the rule's time
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	if folded, _, err := transform.String(t, s); err == nil {
		s = folded
	}
	return strings.ReplaceAll(s, "ß", "ss")
}
