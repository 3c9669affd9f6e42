package compiler

import (
	"math/rand/v2"
	"slices"
)

// Perturb returns a config that keeps each node of the given kinds at its chosen option
// with probability 1-p and otherwise picks a uniformly random valid option (which may be
// the same one), starting from base (nil: empty). Nodes of other kinds keep base's
// entries. It is the random-configuration sampler of dataset generation and search:
// p = 1 gives uniformly random configs of those kinds, small p gives neighbours.
func (s *Space) Perturb(base *Config, kinds []Kind, p float64, r *rand.Rand) *Config {
	c := base.Clone()
	pick := func() bool { return r.Float64() < p }
	if slices.Contains(kinds, KindLayout) {
		for _, lc := range s.Layout {
			if pick() {
				c.Layout[lc.Name] = slices.Clone(lc.Options[r.IntN(len(lc.Options))])
			} else if _, ok := c.Layout[lc.Name]; !ok {
				c.Layout[lc.Name] = slices.Clone(lc.Options[lc.Chosen])
			}
		}
	}
	if slices.Contains(kinds, KindFusion) {
		for _, fc := range s.Fusion {
			if pick() {
				c.Fusion[fc.Name] = r.IntN(2) == 0
			} else if _, ok := c.Fusion[fc.Name]; !ok {
				c.Fusion[fc.Name] = fc.Chosen
			}
		}
	}
	if slices.Contains(kinds, KindTile) {
		for _, tc := range s.Tile {
			if pick() {
				c.Tile[tc.Key] = slices.Clone(tc.Options[r.IntN(len(tc.Options))])
			} else if _, ok := c.Tile[tc.Key]; !ok {
				c.Tile[tc.Key] = slices.Clone(tc.Options[tc.Chosen])
			}
		}
	}
	if slices.Contains(kinds, KindFlags) {
		for _, fc := range s.Flags {
			if pick() {
				c.Flags[fc.Key] = fc.Options[r.IntN(len(fc.Options))]
			} else if _, ok := c.Flags[fc.Key]; !ok {
				c.Flags[fc.Key] = fc.Options[fc.Chosen]
			}
		}
	}
	return c
}
