//go:build !linux

package boot

// Renice does nothing outside Linux: WORKER_NICE applies to Linux hosts only.
func Renice(n int) error { return nil }
