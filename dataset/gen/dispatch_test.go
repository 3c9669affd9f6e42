package gen

import (
	"slices"
	"testing"
)

// The next model's first unit goes before a model's later units; every unit once.
func TestDispatchOrder(t *testing.T) {
	for _, c := range []struct {
		units    []int64
		perModel int64
		want     []int64
	}{
		{[]int64{0, 1, 2, 3, 4, 5}, 2, []int64{0, 2, 1, 4, 3, 5}},
		{[]int64{0, 1, 2, 3, 4, 5, 6, 7}, 4, []int64{0, 4, 1, 2, 3, 5, 6, 7}},
		{[]int64{1, 3, 5}, 2, []int64{1, 3, 5}},       // a shard: one unit per model
		{[]int64{0, 1, 2}, 1, []int64{0, 1, 2}},       // one unit per model
		{[]int64{3, 4, 5, 6}, 4, []int64{3, 4, 5, 6}}, // resumed inside a model
		{nil, 2, []int64{}},
	} {
		if got := dispatchOrder(c.units, c.perModel); !slices.Equal(got, c.want) {
			t.Errorf("dispatchOrder(%v, %d) = %v, want %v", c.units, c.perModel, got, c.want)
		}
	}
}
