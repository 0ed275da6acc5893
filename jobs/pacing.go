package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// pacer spaces campaign opening messages per account and channel, in Redis so that every worker
// process shares it. It implements DESIGN.md's rule exactly: the first openingBurst sends go at once,
// then one every interval (60 s / sendRatePerMinute), measured from the previous send, so a late send
// is never followed by a catch-up burst. The burst is available again only after the channel has been
// quiet for a window (a minute, or openingBurst intervals at slow rates). A GCRA limiter such as
// redis_rate allows such catch-up bursts, which the pacing rule forbids, so this is a small script.
type pacer struct {
	rdb redis.UniversalClient
}

// paceScript takes a slot or says how long to wait for one. KEYS[1]: sorted set of recent send times;
// KEYS[2]: time of the last send. ARGV: interval ms, burst, window ms. Returns the wait in ms (0: sent).
var paceScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval, burst, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= burst then
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  local wait = last + interval - now
  if wait > 0 then return wait end
end
local seq = redis.call('INCR', KEYS[2] .. ':seq')
redis.call('PEXPIRE', KEYS[2] .. ':seq', window)
redis.call('ZADD', KEYS[1], now, now .. ':' .. seq)
redis.call('PEXPIRE', KEYS[1], window)
redis.call('SET', KEYS[2], now, 'PX', window)
return 0
`)

// take claims a send slot for key at perMinute, or returns how long until the next one.
func (p *pacer) take(ctx context.Context, key string, perMinute int) (time.Duration, error) {
	interval := time.Minute / time.Duration(perMinute)
	window := max(time.Minute, time.Duration(openingBurst)*interval)
	wait, err := paceScript.Run(ctx, p.rdb, []string{key + ":recent", key + ":last"},
		interval.Milliseconds(), openingBurst, window.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("pacing: %w", err)
	}
	return time.Duration(wait) * time.Millisecond, nil
}
