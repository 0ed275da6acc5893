package main

import (
	"math"
	"sort"
	"time"
)

// latencySummary is the distribution of a set of durations, in milliseconds. Percentiles are exact
// nearest-rank percentiles over every sample: pN is the smallest sample that at least N% of the samples
// are less than or equal to (sorted[ceil(N/100*count)-1]).
type latencySummary struct {
	Count int     `json:"count"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
}

// summarize returns the summary of samples (which it sorts in place); all zero when there are none.
func summarize(samples []time.Duration) latencySummary {
	if len(samples) == 0 {
		return latencySummary{}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return latencySummary{
		Count: len(samples),
		Min:   ms(samples[0]),
		P50:   ms(percentile(samples, 50)),
		P95:   ms(percentile(samples, 95)),
		P99:   ms(percentile(samples, 99)),
		Max:   ms(samples[len(samples)-1]),
		Mean:  ms(sum / time.Duration(len(samples))),
	}
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted, which must not be empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

// ms is d in milliseconds, rounded to microseconds.
func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

// perSecond is count/d in events per second, 0 when d is not positive.
func perSecond(count int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return round3(float64(count) / d.Seconds())
}

func seconds(d time.Duration) float64 { return round3(d.Seconds()) }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }
