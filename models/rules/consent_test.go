package rules

import (
	"maps"
	"testing"
	"time"
)

func TestNextConsent(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	in := func(d int, src string) ConsentState {
		return ConsentState{Status: ConsentOptedIn, At: day(d), Source: src}
	}
	out := func(d int, src string) ConsentState {
		return ConsentState{Status: ConsentOptedOut, At: day(d), Source: src}
	}
	tests := []struct {
		name          string
		cur           ConsentMap
		change        ConsentChange
		want          ConsentMap
		record, apply bool
	}{
		{"first opt-out on a channel", ConsentMap{},
			ConsentChange{Channel: "sms", Status: ConsentOptedOut, Source: "keyword", At: day(5)},
			ConsentMap{"sms": out(5, "keyword")}, true, true},
		{"the same state again records nothing", ConsentMap{"sms": out(5, "keyword")},
			ConsentChange{Channel: "sms", Status: ConsentOptedOut, Source: "keyword", At: day(6)},
			ConsentMap{"sms": out(5, "keyword")}, false, false},
		{"the same state again, Always: recorded and re-dated", ConsentMap{"sms": out(5, "keyword")},
			ConsentChange{Channel: "sms", Status: ConsentOptedOut, Source: "inbox", At: day(6), Always: true},
			ConsentMap{"sms": out(6, "inbox")}, true, true},
		{"the all-channels state holds on a channel with none of its own", ConsentMap{"*": out(5, "api")},
			ConsentChange{Channel: "sms", Status: ConsentOptedOut, Source: "keyword", At: day(6)},
			ConsentMap{"*": out(5, "api")}, false, false},
		{"back-dated opt-in: ledger only", ConsentMap{"sms": out(5, "keyword")},
			ConsentChange{Channel: "sms", Status: ConsentOptedIn, Source: "form", At: day(1), Always: true},
			ConsentMap{"sms": out(5, "keyword")}, true, false},
		{"back-dated against the all-channels state: ledger only", ConsentMap{"*": out(5, "api")},
			ConsentChange{Channel: "whatsapp", Status: ConsentOptedIn, Source: "form", At: day(1)},
			ConsentMap{"*": out(5, "api")}, true, false},
		{"a newer opt-in replaces the opt-out", ConsentMap{"sms": out(5, "keyword"), "whatsapp": in(2, "form")},
			ConsentChange{Channel: "sms", Status: ConsentOptedIn, Source: "keyword", At: day(6)},
			ConsentMap{"sms": in(6, "keyword"), "whatsapp": in(2, "form")}, true, true},
		{"all channels replaces each channel's older state", ConsentMap{"sms": in(2, "form"), "whatsapp": in(3, "form")},
			ConsentChange{Channel: "*", Status: ConsentOptedOut, Source: "api", At: day(6)},
			ConsentMap{"*": out(6, "api")}, true, true},
		{"all channels keeps a channel's newer state", ConsentMap{"sms": in(2, "form"), "whatsapp": in(9, "keyword")},
			ConsentChange{Channel: "*", Status: ConsentOptedOut, Source: "api", At: day(6)},
			ConsentMap{"*": out(6, "api"), "whatsapp": in(9, "keyword")}, true, true},
		{"a channel's own state overrides all channels", ConsentMap{"*": in(2, "form")},
			ConsentChange{Channel: "sms", Status: ConsentOptedOut, Source: "keyword", At: day(6)},
			ConsentMap{"*": in(2, "form"), "sms": out(6, "keyword")}, true, true},
		{"a nil map is no consent", nil,
			ConsentChange{Channel: "sms", Status: ConsentOptedIn, Source: "import", At: day(1)},
			ConsentMap{"sms": in(1, "import")}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := maps.Clone(tt.cur)
			next, record, apply := NextConsent(tt.cur, tt.change)
			if record != tt.record || apply != tt.apply {
				t.Errorf("record, apply = %v, %v; want %v, %v", record, apply, tt.record, tt.apply)
			}
			if !maps.Equal(next, tt.want) && !(len(next) == 0 && len(tt.want) == 0) {
				t.Errorf("next = %v, want %v", next, tt.want)
			}
			if !maps.Equal(tt.cur, before) {
				t.Errorf("cur changed to %v, was %v", tt.cur, before)
			}
		})
	}
}
