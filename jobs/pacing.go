package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// pacer spaces campaign opening messages per account and channel, in Redis so that every worker
// process shares it. It implements the README's rule exactly: the first openingBurst sends go at once,
// then one every interval (60 s / sendRatePerMinute). Each send reserves its slot once, so the rate
// holds on average however late a worker wakes, and slots never come closer than the interval: a
// GCRA limiter (redis_rate) would let late senders catch up in a burst, which the rule forbids. The
// burst is available again only after the channel has been quiet for a window (a minute, or
// openingBurst intervals at slow rates).
type pacer struct {
	rdb redis.UniversalClient
}

// reserveScript returns the milliseconds until the send's slot (<= 0: go now), reserving the next
// free slot the first time a send asks. KEYS[1]: sorted set of recent slots; KEYS[2]: the latest slot;
// KEYS[3]: the sequence that tells apart slots of the same millisecond; KEYS[4]: this send's
// reservation. All four are in the channel's slot (paceKeys). ARGV: interval ms, burst, window ms.
var reserveScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('GET', KEYS[4])
if held then return tonumber(held) - now end
local interval, burst, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local slot = now
if redis.call('ZCARD', KEYS[1]) >= burst then
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  if last + interval > slot then slot = last + interval end
end
local seq = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], slot, slot .. ':' .. seq)
local ttl = slot - now + window
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
redis.call('SET', KEYS[2], slot, 'PX', ttl)
redis.call('SET', KEYS[4], slot, 'PX', slot - now + 3600000)
return slot - now
`)

// paceKeys are the Redis keys of an account's channel's pace and of one send's reservation on it:
// pace:{<account>:<channel>}:recent, :last, :seq and :slot:<send>. The hash tag puts them in one slot on
// Redis Cluster, which reserveScript needs; different channels spread over the cluster.
func paceKeys(accountID, channel, sendID string) []string {
	base := "pace:{" + accountID + ":" + channel + "}:"
	return []string{base + "recent", base + "last", base + "seq", base + "slot:" + sendID}
}

// reserve returns how long until the send's slot on the account's channel at perMinute (zero or less:
// now), reserving one the first time the send asks.
func (p *pacer) reserve(ctx context.Context, accountID, channel, sendID string, perMinute int) (time.Duration, error) {
	interval := time.Minute / time.Duration(perMinute)
	window := max(time.Minute, time.Duration(openingBurst)*interval)
	wait, err := reserveScript.Run(ctx, p.rdb, paceKeys(accountID, channel, sendID),
		interval.Milliseconds(), openingBurst, window.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("pacing: %w", err)
	}
	return time.Duration(wait) * time.Millisecond, nil
}

// release gives up a send's reservation (its campaign was paused), so that resuming reserves anew
// instead of sending every held message at once on its old slot.
func (p *pacer) release(ctx context.Context, accountID, channel, sendID string) error {
	return p.rdb.Del(ctx, paceKeys(accountID, channel, sendID)[3]).Err()
}
