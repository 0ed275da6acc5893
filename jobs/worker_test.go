package jobs

import (
	"slices"
	"testing"
)

func TestConcurrenciesShareWorkerConcurrency(t *testing.T) {
	for _, tc := range []struct {
		total int
		want  []int
	}{
		{1, []int{1}}, {5, []int{5}}, // one loop keeps up with so few tasks
		{6, []int{3, 2, 1}}, {7, []int{3, 2, 2}}, {20, []int{10, 5, 5}}, {21, []int{10, 6, 5}}, {100, []int{50, 25, 25}},
	} {
		got := concurrencies(tc.total)
		if !slices.Equal(got, tc.want) {
			t.Errorf("concurrencies(%d) = %v, want %v", tc.total, got, tc.want)
		}
	}
	for total := 1; total <= 200; total++ {
		got := concurrencies(total)
		sum := 0
		for _, n := range got {
			if n < 1 {
				t.Fatalf("concurrencies(%d) = %v: a server without a slot", total, got)
			}
			sum += n
		}
		if sum != total {
			t.Fatalf("concurrencies(%d) = %v: sums to %d", total, got, sum)
		}
	}
}
