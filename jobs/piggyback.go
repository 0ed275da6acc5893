package jobs

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// asynq's Client runs one Lua script (EVALSHA, then EVAL after NOSCRIPT) per enqueue and has no way to
// add commands to that call. The Queue's Redis client therefore carries piggybackHook: a context made
// by withPiggyback carries commands that the hook sends in the same pipeline as the next script call
// made with that context, so they cost no round trip of their own (the incoming endpoint's
// de-duplication SET rides with the bot reply's enqueue, api/incoming.go).

type piggybackKey struct{}

// piggyback is commands waiting for a script call. It belongs to one request's goroutine.
type piggyback struct {
	cmds []redis.Cmder
	// sent: the commands went out with a script call that Redis ran (not refused with NOSCRIPT).
	sent bool
}

// withPiggyback returns a context whose next script call on the Queue's client also sends cmds, after
// the script, in the same round trip. Once: later calls with the context send only their own command.
func withPiggyback(ctx context.Context, cmds ...redis.Cmder) (context.Context, *piggyback) {
	p := &piggyback{cmds: cmds}
	return context.WithValue(ctx, piggybackKey{}, p), p
}

// piggybackHook is the go-redis hook that sends a context's piggyback commands (see withPiggyback).
type piggybackHook struct {
	rdb redis.UniversalClient
}

func (h *piggybackHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *piggybackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *piggybackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		p, _ := ctx.Value(piggybackKey{}).(*piggyback)
		if p == nil || p.sent || !isScriptCall(cmd) {
			return next(ctx, cmd)
		}
		pipe := h.rdb.Pipeline()
		_ = pipe.Process(ctx, cmd)
		for _, extra := range p.cmds {
			_ = pipe.Process(ctx, extra)
		}
		_, _ = pipe.Exec(ctx) // each command carries its own outcome
		// After NOSCRIPT go-redis sends the script again with EVAL: the commands go with that call
		// instead (those built by setIfQueued change nothing when the task is not in Redis yet).
		p.sent = !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT")
		return cmd.Err()
	}
}

func isScriptCall(cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "evalsha", "eval":
		return true
	}
	return false
}

// setIfQueuedScript sets a key only while a task is in Redis.
//
//	KEYS[1] the task's key (asynqTaskKey), KEYS[2] the key to set, in the task's slot (BesideBotReplies
//	for a bot reply); ARGV[1] its value, ARGV[2] its TTL in ms
//
// It is sent with EVAL (its source, not its SHA), so that it never needs a round trip of its own after a
// NOSCRIPT. Redis caches the compiled script by its SHA.
const setIfQueuedScript = `
if redis.call("EXISTS", KEYS[1]) == 1 then
  return redis.call("SET", KEYS[2], ARGV[1], "PX", ARGV[2])
end
return false
`

// setIfQueued is a command for withPiggyback: after an enqueue of the task queue/taskID in the same
// pipeline, it sets key to value for ttl if the task is then in Redis, that is, unless the enqueue
// failed. Its result is "OK" when it set the key, redis.Nil when it did not.
func setIfQueued(ctx context.Context, queue, taskID, key, value string, ttl time.Duration) *redis.Cmd {
	return redis.NewCmd(ctx, "eval", setIfQueuedScript, 2, asynqTaskKey(queue, taskID), key, value, ttl.Milliseconds())
}

// asynqTaskKey is the key of a task's hash in asynq's layout (internal/base.TaskKey, the same from
// asynq v0.18 to v0.26): it exists from the enqueue until the task is done. api/roundtrips_test.go
// fails if a new asynq version moves it (the de-duplication key would never be set).
func asynqTaskKey(queue, taskID string) string {
	return "asynq:{" + queue + "}:t:" + taskID
}

// errNotQueued is setIfQueued's answer when the task was not in Redis.
var errNotQueued = errors.New("the task was not in Redis after the enqueue: key not set")
