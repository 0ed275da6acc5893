package rules

import (
	"strings"
	"testing"
	"time"
)

func TestConsentRule(t *testing.T) {
	at := time.Date(2026, 3, 5, 14, 30, 0, 0, time.UTC)
	optedOut := ConsentMap{"sms": {Status: ConsentOptedOut, At: at, Source: "keyword"}}
	tests := []struct {
		name             string
		purpose, channel string
		consent          ConsentMap
		refused          bool
		reason           string
	}{
		{"opted out on the channel", PurposeCampaign, "sms", optedOut, true, "OPTED_OUT: the contact opted out on sms on 2026-03-05 14:30 UTC (keyword)"},
		{"a keyword's own answer still goes", PurposeCompliance, "sms", optedOut, false, ""},
		{"another channel", PurposeTeamReply, "whatsapp", optedOut, false, ""},
		{"opted out everywhere", PurposeBotReply, "whatsapp", ConsentMap{"*": {Status: ConsentOptedOut, At: at, Source: "api"}}, true, "OPTED_OUT: the contact opted out on whatsapp on 2026-03-05 14:30 UTC (api)"},
		{"the channel's opt-in overrides all channels", PurposeAPISend, "sms", ConsentMap{"*": {Status: ConsentOptedOut, At: at}, "sms": {Status: ConsentOptedIn, At: at}}, false, ""},
		{"nothing recorded", PurposeCampaign, "sms", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, refused := ConsentRule(tt.purpose, tt.consent, tt.channel)
			if refused != tt.refused || d.Reason != tt.reason {
				t.Errorf("ConsentRule = %+v, %v; want refused %v, %q", d, refused, tt.refused, tt.reason)
			}
			if refused && (d.Verdict != DoNotSend || d.Code() != ReasonOptedOut) {
				t.Errorf("ConsentRule = %+v, want %v with code %s", d, DoNotSend, ReasonOptedOut)
			}
		})
	}
}

func TestWindowRule(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name     string
		f        WindowFacts
		want     Decision
		contains string // for a refusal: what its reason says
	}{
		{"WhatsApp within 24h", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeBotReply, LastWrote: ago(time.Hour)}, Decision{Verdict: SendNow}, ""},
		{"WhatsApp at exactly 24h", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeTeamReply, LastWrote: ago(StandardWindow)}, Decision{Verdict: SendNow}, ""},
		{"WhatsApp campaign after 24h with a template", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeCampaign, HasTemplate: true, LastWrote: ago(48 * time.Hour)}, Decision{Verdict: SendNow, Template: true}, ""},
		{"WhatsApp campaign, never wrote, template", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeCampaign, HasTemplate: true}, Decision{Verdict: SendNow, Template: true}, ""},
		{"WhatsApp campaign without a template", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeCampaign, LastWrote: ago(48 * time.Hour)}, Decision{Verdict: DoNotSend}, "more than 24 hours ago, and the campaign has no whatsappTemplate"},
		{"WhatsApp team reply after 24h", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeTeamReply, LastWrote: ago(25 * time.Hour)}, Decision{Verdict: DoNotSend}, "WhatsApp then accepts only a campaign's approved template"},
		{"WhatsApp template of a non-campaign does not count", WindowFacts{Channel: ChannelWhatsApp, Purpose: PurposeAPISend, HasTemplate: true}, Decision{Verdict: DoNotSend}, "has never written on whatsapp"},
		{"Messenger within 24h", WindowFacts{Channel: ChannelMessenger, Purpose: PurposeCampaign, LastWrote: ago(23 * time.Hour)}, Decision{Verdict: SendNow}, ""},
		{"Messenger never wrote", WindowFacts{Channel: ChannelMessenger, Purpose: PurposeTeamReply}, Decision{Verdict: DoNotSend}, "has never written on messenger"},
		{"Instagram team reply on day 3: HUMAN_AGENT", WindowFacts{Channel: ChannelInstagram, Purpose: PurposeTeamReply, LastWrote: ago(72 * time.Hour)}, Decision{Verdict: SendNow, HumanAgent: true}, ""},
		{"Instagram bot reply on day 3", WindowFacts{Channel: ChannelInstagram, Purpose: PurposeBotReply, LastWrote: ago(72 * time.Hour)}, Decision{Verdict: DoNotSend}, "only a team member's reply may go out, for 7 days"},
		{"Messenger team reply at exactly 7 days", WindowFacts{Channel: ChannelMessenger, Purpose: PurposeTeamReply, LastWrote: ago(HumanAgentWindow)}, Decision{Verdict: SendNow, HumanAgent: true}, ""},
		{"Messenger team reply after 7 days", WindowFacts{Channel: ChannelMessenger, Purpose: PurposeTeamReply, LastWrote: ago(HumanAgentWindow + time.Minute)}, Decision{Verdict: DoNotSend}, "more than 7 days ago"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.At = now
			got := WindowRule(tt.f)
			if tt.want.Verdict == DoNotSend {
				if got.Verdict != DoNotSend || got.Code() != ReasonOutsideWindow || !strings.Contains(got.Reason, tt.contains) {
					t.Errorf("WindowRule = %+v, want a refusal %s naming %q", got, ReasonOutsideWindow, tt.contains)
				}
				return
			}
			if got != tt.want {
				t.Errorf("WindowRule = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestQuietRule(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	night := &QuietHours{Start: "21:00", End: "08:00"}
	allowed := Decision{Verdict: SendNow, Template: true}
	tests := []struct {
		name string
		f    QuietFacts
		want Decision
	}{
		{"no quiet hours", QuietFacts{At: time.Date(2026, 3, 10, 23, 0, 0, 0, ny), Phone: "+12125550123"}, allowed},
		{"daytime in the contact's zone", QuietFacts{Quiet: night, Phone: "+12125550123", At: time.Date(2026, 3, 10, 12, 0, 0, 0, ny)}, allowed},
		{"night in the phone's zone: later, keeping the rest of the decision", QuietFacts{Quiet: night, Phone: "+12125550123", AccountZone: "UTC", At: time.Date(2026, 3, 10, 23, 0, 0, 0, ny)},
			Decision{Verdict: SendLater, NotBefore: time.Date(2026, 3, 11, 8, 0, 0, 0, ny), Template: true}},
		{"the contact's own zone wins", QuietFacts{Quiet: night, Phone: "+12125550123", TimeZone: "Asia/Tokyo", At: time.Date(2026, 3, 10, 23, 0, 0, 0, ny)}, allowed},
		{"Florida's 20:00", QuietFacts{Quiet: night, Phone: "+13055550123", At: time.Date(2026, 3, 10, 20, 30, 0, 0, ny)},
			Decision{Verdict: SendLater, NotBefore: time.Date(2026, 3, 11, 8, 0, 0, 0, ny), Template: true}},
		{"no phone: the account's zone", QuietFacts{Quiet: night, AccountZone: "America/New_York", At: time.Date(2026, 3, 10, 7, 0, 0, 0, ny)},
			Decision{Verdict: SendLater, NotBefore: time.Date(2026, 3, 10, 8, 0, 0, 0, ny), Template: true}},
		{"an invalid window never sends", QuietFacts{Quiet: &QuietHours{Start: "21:00", End: "21:00"}, At: time.Date(2026, 3, 10, 12, 0, 0, 0, ny)},
			Decision{Verdict: DoNotSend, Reason: ReasonQuietHours + ": no minute of the next two days is outside the quiet hours in every time zone of the contact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := QuietRule(allowed, tt.f)
			if got.Verdict != tt.want.Verdict || !got.NotBefore.Equal(tt.want.NotBefore) || got.Reason != tt.want.Reason ||
				got.Template != tt.want.Template || got.HumanAgent != tt.want.HumanAgent {
				t.Errorf("QuietRule = %+v, want %+v", got, tt.want)
			}
		})
	}
}
