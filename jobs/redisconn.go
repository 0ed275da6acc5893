package jobs

import (
	"fmt"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// SharedRedis is an asynq.RedisConnOpt that hands out one existing go-redis client instead of making
// a new one each time it is asked: asynq's client, servers, scheduler and inspector, and asynqmon, all
// then work on the process's one client (cmd/internal/boot), with its one connection pool per Redis
// node and, on Redis Cluster, its one map of the cluster. Its owner closes it; the Queue and the
// Worker given one do not (asynq's Client.Close and Inspector.Close refuse to, asynqmon's Close would:
// the api does not call it then).
type SharedRedis struct{ Client redis.UniversalClient }

// MakeRedisClient returns the shared client itself.
func (s SharedRedis) MakeRedisClient() any { return s.Client }

// clientOf returns the client opt gives and whether the caller owns it (and must close it): not when
// opt is SharedRedis.
func clientOf(opt asynq.RedisConnOpt) (rdb redis.UniversalClient, owned bool) {
	if s, ok := opt.(SharedRedis); ok {
		return s.Client, false
	}
	rdb, ok := opt.MakeRedisClient().(redis.UniversalClient)
	if !ok {
		panic(fmt.Sprintf("jobs: unsupported RedisConnOpt type %T", opt)) // as asynq.NewClient
	}
	return rdb, true
}

// hashTag is the part of a Redis key that Redis Cluster hashes to choose the key's slot: what lies
// between the first "{" and the first "}" after it when that is not empty, else the whole key. Keys
// that one script or transaction touches together must have the same.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}
