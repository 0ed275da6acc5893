package rules

import "testing"

// skipUnderRace skips a test in a binary built with -race. A test that computes on one goroutine only
// and takes long under the detector (parsing 50,000 rows, checking every area code) gives it nothing to
// find; it runs in the pass without the detector (.ci/run runs both passes).
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skip("one goroutine, no shared state: runs in the test pass without -race")
	}
}
