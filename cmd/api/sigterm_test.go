package main_test

import "testing"

// TestSIGTERMUnderLoadLosesNothing stops the api and then the worker with SIGTERM while clients keep
// posting incoming messages, as a deploy or a dyno restart does, and starts new ones 10 s later. Each
// must exit cleanly within 10 s (stop checks that), the api after finishing the requests it had taken
// (clients meanwhile find no server and retry), the worker after returning unfinished tasks to their
// queue; every message retried to a 200 ends with exactly one reply.
func TestSIGTERMUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("in standalone mode the api is the worker and Redis is in-process; the PostgreSQL pass runs this test")
	}
	t.Run("api", func(t *testing.T) {
		t.Parallel()
		backends, store := ownBackends(t)
		outageUnderLoad(t, "sigterm-api@example.com", backends, store, fault{
			down: func(d *deployment) { d.api.stop(t) },
			up: func(d *deployment) {
				d.api = start(t, d.environ, "api")
				waitReady(t, d.base, d.api)
			},
			refuses: true,
		})
	})
	t.Run("worker", func(t *testing.T) {
		t.Parallel()
		backends, store := ownBackends(t)
		outageUnderLoad(t, "sigterm-worker@example.com", backends, store, fault{
			down: func(d *deployment) { d.worker.stop(t) },
			up:   func(d *deployment) { d.worker = start(t, d.environ, "worker") },
		})
	})
}
