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
// keeps the group of Passes: the default of opt.SimplifyPipelines (opt.XLAOrderPasses,
// XLA's order) iterated to a fixed point, at most opt.DefaultMaxIterations times;
// Pipeline names a group of opt.SimplifyPipelines, iterated likewise ("legacy":
// opt.LegacyPasses, the order before XLA's; "" and opt.DefaultSimplifyPipeline keep the
// group of Passes); Passes runs the given passes once each, in order (a pass listed
// twice runs twice); None runs none. Setting more than one of them is an error. Passes
// are identified by name (in the pass log, by Options.DumpAfter and in the
// KernelCache's memo), so a custom pass must not reuse the name of another pass of the
// list: the list s selects is checked by CheckPasses.
type Simplify struct {
	Passes   []opt.Pass
	None     bool
	Pipeline string
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
// (passes itself for the zero value), checked by CheckPasses unless the group is left
// empty (None): a pipeline's group declares the repeats the pipeline declares, a Passes
// list the names it lists more than once (the caller listed them so). A selection other
// than the default needs a pass named SimplifyGroup in the list.
func (s Simplify) apply(passes []Pass) ([]Pass, error) {
	pipeline := s.Pipeline != "" && s.Pipeline != opt.DefaultSimplifyPipeline
	if !s.None && len(s.Passes) == 0 && !pipeline {
		return passes, nil
	}
	if s.None && len(s.Passes) > 0 {
		return nil, errors.New("simplification: both None and a pass list are set")
	}
	if pipeline && (s.None || len(s.Passes) > 0) {
		return nil, fmt.Errorf("simplification: both the pipeline %q and a pass list are set", s.Pipeline)
	}
	i := slices.IndexFunc(passes, func(p Pass) bool { return p.Name == SimplifyGroup })
	if i < 0 {
		return nil, fmt.Errorf("simplification: the pass list has no %s group to select passes for", SimplifyGroup)
	}
	out := slices.Clone(passes)
	if pipeline {
		sp, err := opt.LookupSimplifyPipeline(s.Pipeline)
		if err != nil {
			return nil, fmt.Errorf("simplification: %w", err)
		}
		out[i] = simplifyGroup(sp)
	} else {
		out[i].Group, out[i].MaxIterations, out[i].Repeats = []Pass{}, 0, nil
		seen := map[string]bool{}
		for _, p := range s.Passes {
			if seen[p.Name] && !slices.Contains(out[i].Repeats, p.Name) {
				out[i].Repeats = append(out[i].Repeats, p.Name)
			}
			seen[p.Name] = true
			out[i].Group = append(out[i].Group, OptPass(p))
		}
	}
	if len(out[i].Group) == 0 { // None: the group runs nothing
		return out, nil
	}
	if err := CheckPasses(out); err != nil {
		return nil, fmt.Errorf("simplification: %w", err)
	}
	return out, nil
}

// ParseSimplifyPipeline reads the CLI's --pipeline (a name of opt.SimplifyPipelines; ""
// when not given) and --passes (ParseSimplify) together: a named pipeline runs its group
// to a fixed point and takes no pass list; opt.DefaultSimplifyPipeline ("xla") and ""
// select the group of Passes (the zero Simplify). An unknown pipeline name is an error
// listing the valid ones.
func ParseSimplifyPipeline(pipeline, list string) (Simplify, error) {
	s, err := ParseSimplify(list)
	if err != nil {
		return Simplify{}, fmt.Errorf("--passes %q: %w", list, err)
	}
	if pipeline == "" {
		return s, nil
	}
	if _, err := opt.LookupSimplifyPipeline(pipeline); err != nil {
		return Simplify{}, fmt.Errorf("--pipeline %q: want one of %s", pipeline, strings.Join(opt.SimplifyPipelineNames(), ", "))
	}
	if s.None || len(s.Passes) > 0 {
		return Simplify{}, fmt.Errorf("--pipeline %q and --passes %q: want one of them (the pipeline runs its own group)", pipeline, list)
	}
	if pipeline == opt.DefaultSimplifyPipeline {
		return Simplify{}, nil
	}
	return Simplify{Pipeline: pipeline}, nil
}
