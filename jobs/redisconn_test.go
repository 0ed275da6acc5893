package jobs

import "testing"

// hashTag follows Redis Cluster's rule for the part of a key that chooses its slot.
func TestHashTag(t *testing.T) {
	for key, want := range map[string]string{
		"plain":                  "plain",
		"asynq:{default}:t:x":    "default",
		"a{b}c{d}":               "b",
		"a{}b{c}":                "a{}b{c}", // an empty first tag: the whole key
		"a{b":                    "a{b",
		"dedupe:{default}:{sid}": "default",
	} {
		if got := hashTag(key); got != want {
			t.Errorf("hashTag(%q) = %q, want %q", key, got, want)
		}
	}
}

// The keys each script takes are in one slot on Redis Cluster: the pace's four, and the keys set
// beside a bot reply's task.
func TestScriptKeysShareASlot(t *testing.T) {
	keys := paceKeys("acc_1", "custom:chat", "snd_1")
	for _, k := range keys[1:] {
		if hashTag(k) != hashTag(keys[0]) {
			t.Errorf("pace keys %q and %q are in different slots", keys[0], k)
		}
	}
	task := asynqTaskKey(QueueDefault, botBatchTaskID("msg_1"))
	for _, k := range []string{botBatchKey("msg_1"), BesideBotReplies("dedupe:", "incoming:h:sid{x}")} {
		if hashTag(k) != hashTag(task) {
			t.Errorf("%q is not in the slot of the bot replies' task %q", k, task)
		}
	}
}
