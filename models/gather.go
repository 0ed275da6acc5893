package models

// Gather appends to batch what queue holds now, without waiting, until batch has max items. It is the
// second half of a group commit: the caller waits for a first item, then takes what arrived while the
// previous batch was on its way (the ingest batcher, the live events' publisher, the api's bot reply
// enqueues in jobs). Nothing waits to fill a batch.
func Gather[T any](batch []T, queue <-chan T, max int) []T {
	for len(batch) < max {
		select {
		case v := <-queue:
			batch = append(batch, v)
		default:
			return batch
		}
	}
	return batch
}
