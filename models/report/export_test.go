package report

// SetFewStatusForTest sets how many conversations of a status are few enough for the list to find
// them through their index rather than by walking the messages (walkForStatus), until restore.
func SetFewStatusForTest(n int) (restore func()) {
	was := fewStatus
	fewStatus = n
	return func() { fewStatus = was }
}
