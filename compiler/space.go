package compiler

import (
	"math/rand/v2"
	"slices"
)

// Perturb returns a config that keeps each node of the given kinds at its chosen option
// with probability 1-p and otherwise picks a uniformly random valid option (which may be
// the same one), starting from base (nil: empty). Nodes of other kinds keep base's
// entries. It is the random-configuration sampler of dataset generation and search:
// p = 1 gives uniformly random configs of those kinds, small p gives neighbours. Kinds are
// visited in pipeline order and nodes in the Space's order, one draw per decision, so the
// same seed gives the same config.
func (s *Space) Perturb(base *Config, kinds []Kind, p float64, r *rand.Rand) *Config {
	c := base.Clone()
	for _, k := range Kinds() {
		if !slices.Contains(kinds, k) {
			continue
		}
		for _, n := range s.Nodes(k) {
			if r.Float64() < p {
				i := r.IntN(n.Options)
				if k == KindFusion {
					// A fusion edge fuses on a draw of 0: the sampler's order since
					// datasets were first generated, kept so that they stay byte-identical.
					i = 1 - i
				}
				c.Set(k, n.Name, s.Option(n, i))
			} else if _, ok := c.Get(k, n.Name); !ok {
				c.Set(k, n.Name, s.Option(n, n.Chosen))
			}
		}
	}
	return c
}
