package jobs

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"funnelchat/models/rules"
)

func TestOfflineBotHandoffWords(t *testing.T) {
	tests := []struct {
		text    string
		handoff bool
	}{
		{"HUMAN", true},
		{"talk to an agent", true},
		{"a real person please", true},
		{"representative?", true},
		{"Can I speak to one of your agents", true},
		{"Human-to-human, please", true},
		{"humanity", false},
		{"agenda", false},
		{"my personal email", false},
		{"What does it cost?", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			req := BotRequest{History: []BotTurn{{Role: BotRoleAssistant, Text: "Ask me anything, or ask for a person."}, {Role: BotRoleUser, Text: tt.text}}}
			got, err := offlineBot{}.Reply(context.Background(), req)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if got.Handoff != tt.handoff {
				t.Fatalf("Handoff = %v, want %v (response %+v)", got.Handoff, tt.handoff, got)
			}
			if tt.handoff && (got.HandoffReason != "contact asked for a human" || got.Text != "") {
				t.Errorf("handoff response = %+v, want reason %q and no text", got, "contact asked for a human")
			}
			if !tt.handoff && got.Text == "" {
				t.Error("no handoff and no text")
			}
		})
	}
}

func TestOfflineBotReplies(t *testing.T) {
	long := strings.Repeat("abcdefghij", 12)
	tests := []struct {
		name string
		req  BotRequest
		want string
	}{
		{"name, message and goal",
			BotRequest{FirstName: "Ann", Goal: "book a demo call.", History: []BotTurn{{Role: BotRoleUser, Text: "How  much\nis it?"}}},
			`Hi Ann! Thanks for your message: "How much is it?". Could we take the next step together? Book a demo call.`},
		{"no name, no goal",
			BotRequest{History: []BotTurn{{Role: BotRoleUser, Text: "Hello"}, {Role: BotRoleAssistant, Text: "Hi!"}}},
			`Hi! Thanks for your message: "Hello". How can I help you?`},
		{"long message is quoted to 80 characters",
			BotRequest{History: []BotTurn{{Role: BotRoleUser, Text: long}}},
			`Hi! Thanks for your message: "` + long[:77] + `...". How can I help you?`},
		{"empty request is still answered",
			BotRequest{},
			`Hi! Thanks for your message. How can I help you?`},
		{"follow-up with goal",
			BotRequest{FollowUp: true, FirstName: "Ann", Goal: "book a demo call", History: []BotTurn{{Role: BotRoleAssistant, Text: "Hi Ann!"}}},
			`Hi Ann! Just checking in on my last message. Shall we continue? Book a demo call.`},
		{"follow-up without goal",
			BotRequest{FollowUp: true},
			`Hi! Just checking in on my last message. Is there anything I can help you with?`},
		{"follow-up ignores an old request for a human",
			BotRequest{FollowUp: true, History: []BotTurn{{Role: BotRoleUser, Text: "human please"}, {Role: BotRoleAssistant, Text: "Back to the bot."}}},
			`Hi! Just checking in on my last message. Is there anything I can help you with?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bot := NewBot(loadConfig(t, map[string]string{}), nil)
			first, err := bot.Reply(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if diff := cmp.Diff(BotResponse{Text: tt.want}, first); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			again, _ := bot.Reply(context.Background(), tt.req)
			if again != first {
				t.Errorf("same request, different answers: %+v then %+v", first, again)
			}
		})
	}
}

func TestOfflineBotLanguages(t *testing.T) {
	history := []BotTurn{{Role: BotRoleUser, Text: "Hola"}}
	tests := []struct {
		language                                   string
		reply, replyNoGoal, followUp, followNoGoal string
	}{
		{"es",
			`¡Hola, Ana! Gracias por tu mensaje: "Hola". ¿Damos juntos el siguiente paso? Reservar una demo.`,
			`¡Hola! Gracias por tu mensaje: "Hola". ¿En qué puedo ayudarte?`,
			`¡Hola, Ana! Te escribo para retomar mi último mensaje. ¿Seguimos? Reservar una demo.`,
			`¡Hola! Te escribo para retomar mi último mensaje. ¿Hay algo en lo que pueda ayudarte?`},
		{"pt-BR",
			`Olá, Ana! Obrigado pela sua mensagem: "Hola". Podemos dar o próximo passo juntos? Reservar una demo.`,
			`Olá! Obrigado pela sua mensagem: "Hola". Como posso ajudar?`,
			`Olá, Ana! Passando para retomar a minha última mensagem. Vamos continuar? Reservar una demo.`,
			`Olá! Passando para retomar a minha última mensagem. Posso ajudar em alguma coisa?`},
		{"fr",
			`Bonjour Ana ! Merci pour votre message : « Hola ». Pouvons-nous passer ensemble à l'étape suivante ? Reservar una demo.`,
			`Bonjour ! Merci pour votre message : « Hola ». Comment puis-je vous aider ?`,
			`Bonjour Ana ! Je reviens vers vous au sujet de mon dernier message. Souhaitez-vous continuer ? Reservar una demo.`,
			`Bonjour ! Je reviens vers vous au sujet de mon dernier message. Puis-je vous aider en quoi que ce soit ?`},
		{"de-AT",
			`Hallo Ana! Danke für Ihre Nachricht: „Hola“. Sollen wir gemeinsam den nächsten Schritt gehen? Reservar una demo.`,
			`Hallo! Danke für Ihre Nachricht: „Hola“. Wie kann ich Ihnen helfen?`,
			`Hallo Ana! Ich wollte kurz an meine letzte Nachricht erinnern. Wollen wir weitermachen? Reservar una demo.`,
			`Hallo! Ich wollte kurz an meine letzte Nachricht erinnern. Kann ich Ihnen irgendwie helfen?`},
		{"it",
			`Ciao Ana! Grazie per il tuo messaggio: "Hola". Facciamo insieme il prossimo passo? Reservar una demo.`,
			`Ciao! Grazie per il tuo messaggio: "Hola". Come posso aiutarti?`,
			`Ciao Ana! Ti scrivo per riprendere il mio ultimo messaggio. Vogliamo continuare? Reservar una demo.`,
			`Ciao! Ti scrivo per riprendere il mio ultimo messaggio. Posso aiutarti in qualcosa?`},
		// Languages the offline bot does not write, and tags it cannot read, get English.
		{"ja",
			`Hi Ana! Thanks for your message: "Hola". Could we take the next step together? Reservar una demo.`,
			`Hi! Thanks for your message: "Hola". How can I help you?`,
			`Hi Ana! Just checking in on my last message. Shall we continue? Reservar una demo.`,
			`Hi! Just checking in on my last message. Is there anything I can help you with?`},
		{"not a tag!",
			`Hi Ana! Thanks for your message: "Hola". Could we take the next step together? Reservar una demo.`,
			`Hi! Thanks for your message: "Hola". How can I help you?`,
			`Hi Ana! Just checking in on my last message. Shall we continue? Reservar una demo.`,
			`Hi! Just checking in on my last message. Is there anything I can help you with?`},
	}
	for _, tt := range tests {
		t.Run(tt.language, func(t *testing.T) {
			cases := []struct {
				name string
				req  BotRequest
				want string
			}{
				{"reply", BotRequest{Language: tt.language, FirstName: "Ana", Goal: "reservar una demo.", History: history}, tt.reply},
				{"reply without name or goal", BotRequest{Language: tt.language, History: history}, tt.replyNoGoal},
				{"follow-up", BotRequest{Language: tt.language, FollowUp: true, FirstName: "Ana", Goal: "reservar una demo"}, tt.followUp},
				{"follow-up without name or goal", BotRequest{Language: tt.language, FollowUp: true}, tt.followNoGoal},
			}
			for _, c := range cases {
				got, err := offlineBot{}.Reply(context.Background(), c.req)
				if err != nil {
					t.Fatalf("%s: Reply: %v", c.name, err)
				}
				if diff := cmp.Diff(BotResponse{Text: c.want}, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.name, diff)
				}
			}
		})
	}
}

func TestOfflineBotRules(t *testing.T) {
	const instructions = "You are the assistant of Acme Plans. Be brief.\n" +
		"when price, cost, pricing: Plans start at $10 a month.\n" +
		"  WHEN free trial, trial:   Every plan comes with a 14-day free trial  \n" +
		"when cost: This rule is never reached for cost.\n" +
		"when : no words here\n" +
		"when refund:\n" +
		"whenever price: not a rule line\n" +
		"when agent: Our agents answer within a day."
	tests := []struct {
		name, language, goal, text string
		want                       BotResponse
	}{
		{"a matching rule", "", "", "What does it cost?",
			BotResponse{Text: "Hi Ann! Plans start at $10 a month."}},
		{"a rule's answer is followed by the goal", "", "book a demo call.", "pricing?",
			BotResponse{Text: "Hi Ann! Plans start at $10 a month. Could we take the next step together? Book a demo call."}},
		{"the first matching line wins", "", "", "Is there a trial, and what is the price?",
			BotResponse{Text: "Hi Ann! Plans start at $10 a month."}},
		{"any case, and a plural -s", "", "", "Your PRICES look high",
			BotResponse{Text: "Hi Ann! Plans start at $10 a month."}},
		{"a phrase matches its words in a row, and an answer gets a full stop", "", "", "Is there a Free-Trial?",
			BotResponse{Text: "Hi Ann! Every plan comes with a 14-day free trial."}},
		{"no match inside a longer word", "", "", "This is priceless",
			BotResponse{Text: `Hi Ann! Thanks for your message: "This is priceless". How can I help you?`}},
		{"a rule without an answer, or a word that is not when, is no rule", "", "", "I want a refund",
			BotResponse{Text: `Hi Ann! Thanks for your message: "I want a refund". How can I help you?`}},
		{"a handoff request beats a rule", "", "", "price? let me talk to a human",
			BotResponse{Handoff: true, HandoffReason: HandoffContactAsked}},
		{"a handoff request beats a rule on the same word", "", "", "agent please",
			BotResponse{Handoff: true, HandoffReason: HandoffContactAsked}},
		{"the greeting and goal in the request's language", "es", "reservar una demo", "¿Cuál es el price?",
			BotResponse{Text: "¡Hola, Ann! Plans start at $10 a month. ¿Damos juntos el siguiente paso? Reservar una demo."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := BotRequest{Instructions: instructions, Goal: tt.goal, Language: tt.language, FirstName: "Ann",
				History: []BotTurn{{Role: BotRoleUser, Text: "what does it cost?"}, {Role: BotRoleAssistant, Text: "Hi!"}, {Role: BotRoleUser, Text: tt.text}}}
			got, err := offlineBot{}.Reply(context.Background(), req)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a follow-up answers no rule", func(t *testing.T) {
		req := BotRequest{Instructions: instructions, FollowUp: true, History: []BotTurn{{Role: BotRoleUser, Text: "price?"}}}
		got, _ := offlineBot{}.Reply(context.Background(), req)
		if want := "Hi! Just checking in on my last message. Is there anything I can help you with?"; got.Text != want {
			t.Errorf("follow-up %q, want %q", got.Text, want)
		}
	})
}

// A request to stop, in the contact's own words, is answered with the opt-out (the service then sends
// the account's confirmation), never with the bot's greeting and goal: the four messages a user reported
// as answered with a sales push, and one in each other language the bot writes. A sentence that only
// looks like one ("don't stop", "stop by") is answered as usual.
func TestOfflineBotOptOut(t *testing.T) {
	bot := NewBot(loadConfig(t, map[string]string{}), nil)
	for _, tt := range []struct {
		language, text string
		optOut         bool
	}{
		{"en", "stop sending me this", true},
		{"en", "STOP sending me this", true},
		{"en", "stop sending this", true},
		{"en", "stop sending me stuff", true},
		{"es", "deja de enviarme esto", true},
		{"pt-BR", "pare de mandar isso", true},
		{"fr", "arrêtez d'envoyer ça", true},
		{"de", "hören Sie auf, mir das zu schicken", true},
		{"it", "smettete di mandare questa roba", true},
		{"en", "don't stop sending me deals", false},
		{"en", "I'll stop by the store tomorrow", false},
		{"es", "no dejes de escribirme", false},
		{"pt-BR", "não pare de me mandar novidades", false},
	} {
		t.Run(tt.text, func(t *testing.T) {
			req := BotRequest{Language: tt.language, FirstName: "Ann", Goal: "book a demo call",
				History: []BotTurn{{Role: BotRoleAssistant, Text: "Hi Ann! Want a demo?"}, {Role: BotRoleUser, Text: tt.text}}}
			got, err := bot.Reply(context.Background(), req)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if tt.optOut {
				if diff := cmp.Diff(BotResponse{OptOut: true}, got); diff != "" {
					t.Errorf("answer to an opt-out (-want +got):\n%s", diff)
				}
				return
			}
			if got.OptOut || got.Text == "" {
				t.Errorf("answer %+v, want the bot's usual text", got)
			}
		})
	}
}

// The offline bot writes no language in which it cannot read a request to opt out.
func TestOfflineLanguagesHaveOptOutPhrases(t *testing.T) {
	if got, want := slices.Sorted(maps.Keys(offlineLanguages)), rules.OptOutLanguages(); !slices.Equal(got, want) {
		t.Errorf("the offline bot writes %q, rules.AsksToOptOut reads %q", got, want)
	}
}
