package compiler

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler/opt"
)

// Simplify selects the target-independent simplification passes (package opt) that the
// pass list's simplification group (the pass named SimplifyGroup) runs. The zero value
// keeps the group of Passes: opt.DefaultPasses iterated to a fixed point, at most
// opt.DefaultMaxIterations times; Passes runs the given passes once each, in order; None
// runs none. Setting both is an error. Passes are identified by name (in the pass log,
// by Options.DumpAfter and in the KernelCache's memo), so a custom pass must not reuse
// the name of another pass of the list.
type Simplify struct {
	Passes []opt.Pass
	None   bool
}

// ParseSimplify reads a comma-separated list of opt pass names (the CLI's --passes):
// "none" selects no pass, "default" (or "") the default pipeline, anything else those
// passes in that order. An unknown name is an error listing the valid ones.
func ParseSimplify(list string) (Simplify, error) {
	switch strings.TrimSpace(list) {
	case "", "default":
		return Simplify{}, nil
	case "none":
		return Simplify{None: true}, nil
	}
	var names []string
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return Simplify{}, fmt.Errorf("pass list %q has an empty name (passes: %s, or none)", list, strings.Join(opt.Names(), ", "))
		}
		names = append(names, n)
	}
	var ps []opt.Pass
	for _, n := range names {
		p, err := opt.Lookup(n)
		if err != nil {
			return Simplify{}, fmt.Errorf("no simplification pass named %q (passes: %s; or none)", n, strings.Join(opt.Names(), ", "))
		}
		ps = append(ps, p)
	}
	return Simplify{Passes: ps}, nil
}

// apply returns passes with the simplification group's members replaced as s selects
// (passes itself for the zero value). A selection other than the default needs a pass
// named SimplifyGroup in the list.
func (s Simplify) apply(passes []Pass) ([]Pass, error) {
	if !s.None && len(s.Passes) == 0 {
		return passes, nil
	}
	if s.None && len(s.Passes) > 0 {
		return nil, errors.New("simplification: both None and a pass list are set")
	}
	i := slices.IndexFunc(passes, func(p Pass) bool { return p.Name == SimplifyGroup })
	if i < 0 {
		return nil, fmt.Errorf("simplification: the pass list has no %s group to select passes for", SimplifyGroup)
	}
	out := slices.Clone(passes)
	out[i].Group, out[i].MaxIterations = []Pass{}, 0
	for _, p := range s.Passes {
		out[i].Group = append(out[i].Group, OptPass(p))
	}
	return out, nil
}
