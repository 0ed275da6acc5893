package jobs

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/language"

	"funnelchat/models"
)

// offlineBot answers without a model: deterministic and never empty. It writes in the request's
// language when it has texts for it (offlineLanguages; any other language gets English), follows the
// instructions' `when <word>[, <word>...]: <answer>` rules (offlineRules), and steers toward the goal.
// A message that asks to opt out in plain words (models.AsksToOptOut, in every language it writes)
// gets the opt-out, never that text.
type offlineBot struct{}

// handoffWords are the words that, as whole words (or with a plural -s) in any case, mean the contact
// asks for a human: "talk to an agent", "AGENTS please" and "a real person" hand off; "agenda",
// "humanity" and "personal" do not.
var handoffWords = map[string]bool{"human": true, "agent": true, "person": true, "representative": true}

// readsHistory: the offline bot answers the contact's latest message alone, so the worker reads no
// conversation for it (historyReader).
func (offlineBot) readsHistory() bool { return false }

// repeatable: the offline bot's reply is a function of the message, the contact's first name and the
// bot settings, computed at once, so its replies may be sent before they are stored (repeatableBot).
func (offlineBot) repeatable() bool { return true }

func (offlineBot) Reply(_ context.Context, req BotRequest) (BotResponse, error) {
	tx := offlineTextsFor(req.Language)
	name := strings.TrimSpace(req.FirstName)
	goal := sentence(req.Goal)
	if req.FollowUp {
		return BotResponse{Text: tx.followUp(name, goal)}, nil
	}
	last := lastContactText(req.History)
	if models.AsksToOptOut(last) {
		return BotResponse{OptOut: true}, nil
	}
	if asksForHuman(last) {
		return BotResponse{Handoff: true, HandoffReason: HandoffContactAsked}, nil
	}

	var text strings.Builder
	text.WriteString(tx.greeting(name))
	if answer, ok := ruleAnswer(req.Instructions, last); ok {
		text.WriteString(" " + answer)
		if goal != "" {
			fmt.Fprintf(&text, tx.nextStep, goal)
		}
		return BotResponse{Text: text.String()}, nil
	}
	if quote := quoteMessage(last); quote != "" {
		fmt.Fprintf(&text, tx.thanksQuote, quote)
	} else {
		text.WriteString(tx.thanks)
	}
	if goal != "" {
		fmt.Fprintf(&text, tx.nextStep, goal)
	} else {
		text.WriteString(tx.help)
	}
	return BotResponse{Text: text.String()}, nil
}

// offlineTexts are the offline bot's sentences in one language. Every sentence but the greeting starts
// with the space that separates it from the one before; %s is the first name, the quoted message or
// the goal.
type offlineTexts struct {
	hi, hiName          string // greeting without, and with, the first name
	thanks, thanksQuote string // thanks for the message, without and with a quote of it
	nextStep            string // the goal as the next step (after a reply)
	help                string // the offer of help when there is no goal
	checkIn             string // a follow-up's opening
	shallWe             string // the goal as the next step (in a follow-up)
	anything            string // a follow-up's offer of help when there is no goal
}

// offlineLanguages are the languages the offline bot writes, by base language of the BCP 47 tag
// ("pt-BR" is "pt"). The English texts are the fallback for every other language.
var offlineLanguages = map[string]offlineTexts{
	"en": {
		hi: "Hi!", hiName: "Hi %s!",
		thanks: " Thanks for your message.", thanksQuote: " Thanks for your message: \"%s\".",
		nextStep: " Could we take the next step together? %s.", help: " How can I help you?",
		checkIn: " Just checking in on my last message.", shallWe: " Shall we continue? %s.",
		anything: " Is there anything I can help you with?",
	},
	"es": {
		hi: "¡Hola!", hiName: "¡Hola, %s!",
		thanks: " Gracias por tu mensaje.", thanksQuote: " Gracias por tu mensaje: \"%s\".",
		nextStep: " ¿Damos juntos el siguiente paso? %s.", help: " ¿En qué puedo ayudarte?",
		checkIn: " Te escribo para retomar mi último mensaje.", shallWe: " ¿Seguimos? %s.",
		anything: " ¿Hay algo en lo que pueda ayudarte?",
	},
	"pt": {
		hi: "Olá!", hiName: "Olá, %s!",
		thanks: " Obrigado pela sua mensagem.", thanksQuote: " Obrigado pela sua mensagem: \"%s\".",
		nextStep: " Podemos dar o próximo passo juntos? %s.", help: " Como posso ajudar?",
		checkIn: " Passando para retomar a minha última mensagem.", shallWe: " Vamos continuar? %s.",
		anything: " Posso ajudar em alguma coisa?",
	},
	"fr": {
		hi: "Bonjour !", hiName: "Bonjour %s !",
		thanks: " Merci pour votre message.", thanksQuote: " Merci pour votre message : « %s ».",
		nextStep: " Pouvons-nous passer ensemble à l'étape suivante ? %s.", help: " Comment puis-je vous aider ?",
		checkIn: " Je reviens vers vous au sujet de mon dernier message.", shallWe: " Souhaitez-vous continuer ? %s.",
		anything: " Puis-je vous aider en quoi que ce soit ?",
	},
	"de": {
		hi: "Hallo!", hiName: "Hallo %s!",
		thanks: " Danke für Ihre Nachricht.", thanksQuote: " Danke für Ihre Nachricht: „%s“.",
		nextStep: " Sollen wir gemeinsam den nächsten Schritt gehen? %s.", help: " Wie kann ich Ihnen helfen?",
		checkIn: " Ich wollte kurz an meine letzte Nachricht erinnern.", shallWe: " Wollen wir weitermachen? %s.",
		anything: " Kann ich Ihnen irgendwie helfen?",
	},
	"it": {
		hi: "Ciao!", hiName: "Ciao %s!",
		thanks: " Grazie per il tuo messaggio.", thanksQuote: " Grazie per il tuo messaggio: \"%s\".",
		nextStep: " Facciamo insieme il prossimo passo? %s.", help: " Come posso aiutarti?",
		checkIn: " Ti scrivo per riprendere il mio ultimo messaggio.", shallWe: " Vogliamo continuare? %s.",
		anything: " Posso aiutarti in qualcosa?",
	},
}

// offlineTextsFor picks the texts for a BCP 47 tag by its base language; English when the tag is
// empty, invalid or in a language the offline bot does not write.
func offlineTextsFor(tag string) offlineTexts {
	if t, err := language.Parse(strings.TrimSpace(tag)); err == nil {
		base, _ := t.Base()
		if tx, ok := offlineLanguages[base.String()]; ok {
			return tx
		}
	}
	return offlineLanguages["en"]
}

func (tx offlineTexts) greeting(name string) string {
	if name != "" {
		return fmt.Sprintf(tx.hiName, name)
	}
	return tx.hi
}

// followUp is the short nudge sent when the contact has not answered. The follow-up does not look for
// handoff words or rules: the contact's last message was answered (or handed off) already.
func (tx offlineTexts) followUp(name, goal string) string {
	text := tx.greeting(name) + tx.checkIn
	if goal != "" {
		return text + fmt.Sprintf(tx.shallWe, goal)
	}
	return text + tx.anything
}

// offlineRule is one `when <word>[, <word>...]: <answer>` line of the instructions: the answer for a
// message that contains one of the words.
type offlineRule struct {
	words  [][]string // each word (or phrase) as the words of messageWords
	answer string
}

// offlineRules reads the rule lines of instructions, in order: a line that starts with "when" (any
// case) followed by a space, then words (or phrases) separated by commas, a colon and the answer, e.g.
// "when price, cost, pricing: Plans start at $10 a month." Every other line is for the model only; a
// rule line without a word or without an answer is ignored too.
func offlineRules(instructions string) []offlineRule {
	var rules []offlineRule
	for _, line := range strings.Split(instructions, "\n") {
		line = strings.TrimSpace(line)
		if len(line) < 5 || !strings.EqualFold(line[:4], "when") || !unicode.IsSpace(rune(line[4])) {
			continue
		}
		list, answer, ok := strings.Cut(line[4:], ":")
		answer = strings.TrimSpace(answer)
		if !ok || answer == "" {
			continue
		}
		rule := offlineRule{answer: answer}
		for _, w := range strings.Split(list, ",") {
			if words := messageWords(w); len(words) > 0 {
				rule.words = append(rule.words, words)
			}
		}
		if len(rule.words) > 0 {
			rules = append(rules, rule)
		}
	}
	return rules
}

// ruleAnswer is the answer of the first rule of instructions that matches text, ending with
// punctuation so that the goal can follow it. A rule matches when text contains one of its words as a
// whole word in any case, or with a plural -s as asksForHuman allows ("prices" matches "price",
// "priceless" does not); a phrase matches its words in a row.
func ruleAnswer(instructions, text string) (string, bool) {
	rules := offlineRules(instructions)
	if len(rules) == 0 {
		return "", false
	}
	words := messageWords(text)
	for _, rule := range rules {
		for _, phrase := range rule.words {
			if containsPhrase(words, phrase) {
				answer := rule.answer
				if last, _ := utf8.DecodeLastRuneInString(answer); !strings.ContainsRune(".!?…", last) {
					answer += "."
				}
				return answer, true
			}
		}
	}
	return "", false
}

// containsPhrase reports whether phrase occurs in words as consecutive words, each equal or with a
// plural -s added.
func containsPhrase(words, phrase []string) bool {
	for i := 0; i+len(phrase) <= len(words); i++ {
		match := true
		for j, p := range phrase {
			if w := words[i+j]; w != p && strings.TrimSuffix(w, "s") != p {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// lastContactText is the text of the contact's most recent turn, or "" when there is none.
func lastContactText(history []BotTurn) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != BotRoleAssistant {
			return history[i].Text
		}
	}
	return ""
}

// messageWords splits text into lower-case words: runs of letters and digits.
func messageWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// asksForHuman reports whether text contains one of handoffWords as a whole word, or its plural -s.
func asksForHuman(text string) bool {
	for _, w := range messageWords(text) {
		if handoffWords[w] || handoffWords[strings.TrimSuffix(w, "s")] {
			return true
		}
	}
	return false
}

// quoteMessage collapses whitespace and keeps the first 80 characters, marking a cut with "...".
func quoteMessage(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	const limit = 80
	if len([]rune(text)) <= limit {
		return text
	}
	return strings.TrimSpace(string([]rune(text)[:limit-3])) + "..."
}

// sentence turns a goal such as "book a demo call." into "Book a demo call", ready for a sentence of
// its own.
func sentence(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), ".!?… ")
	r := []rune(s)
	if len(r) == 0 {
		return ""
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}
