//go:build race

package main_test

// In the race pass the binaries under test are built with the race detector too, so that a data race
// in the api or the worker shows while they are killed, restarted and cut off from their services.
func init() { buildFlags = append(buildFlags, "-race") }
