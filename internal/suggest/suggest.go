// Package suggest finds the names close to one that names nothing, for "did you mean"
// lists in error messages: ranked by edit distance, and only those within a distance a
// person would call close.
package suggest

import (
	"sort"
	"strings"
)

// Distance is the optimal-string-alignment (restricted Damerau-Levenshtein) distance
// between a and b, over bytes: the fewest insertions, deletions, substitutions and
// transpositions of two adjacent bytes that turn a into b.
func Distance(a, b string) int {
	// rows i-2, i-1 and i of the dynamic programme over prefixes of a and b.
	pp, prev, cur := make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j-1]+cost, prev[j]+1, cur[j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], pp[j-2]+1)
			}
		}
		pp, prev, cur = prev, cur, pp
	}
	return prev[len(b)]
}

// MaxDistance is the largest edit distance at which a candidate is close to name: a
// third of name's length, at least 1 (one typo in a short name) and at most 4.
func MaxDistance(name string) int { return min(max(1, len(name)/3), 4) }

// Closest returns at most n of candidates close to name, closest first (ties in
// candidates' order): those within MaxDistance(name) of it (case-insensitive), then
// those that contain name as a fragment of at least 3 bytes ("bert_base" for
// "bert_base_s128_b8"), nearest in length first. A name close to nothing gets none.
func Closest(name string, candidates []string, n int) []string {
	type cand struct {
		name     string
		fragment bool
		d        int
	}
	lname := strings.ToLower(name)
	limit := MaxDistance(lname)
	var cs []cand
	for _, c := range candidates {
		lc := strings.ToLower(c)
		switch d := Distance(lname, lc); {
		case d <= limit:
			cs = append(cs, cand{c, false, d})
		case len(lname) >= 3 && strings.Contains(lc, lname):
			cs = append(cs, cand{c, true, len(lc) - len(lname)})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].fragment != cs[j].fragment {
			return !cs[i].fragment
		}
		return cs[i].d < cs[j].d
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.name)
	}
	return out
}
