package compiler

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/internal/outpath"
)

// CompileSource builds the source src (a zoo model or an HLO file) at shapes (empty: its
// own) and compiles it under opts with the config file config (empty: the defaults): the
// hook through which packages that do not build models (tpusim, gnn/eval) compile the
// program a command names. The CLI's resolves src with zoo.ResolveShapes and compiles
// with CompileFile.
type CompileSource func(src, shapes, config string, opts Options) (*Program, error)

// CompileRequest is `tpucost compile`: the module Src at Shapes (built by Load), compiled
// with the config file Config (CompileFile) under the simplification passes Passes
// (ParseSimplify), the fusion rule and the staging mode, optionally verified after every
// pass (Check) and dumped after one (DumpAfter); its effective config is written to Out.
// Errors name the flags.
type CompileRequest struct {
	Src       string // a zoo model or an HLO file, which Load builds
	Shapes    string // sizes of its dynamic dimensions (empty: its own)
	Config    string // a config file (empty: the XLA-like defaults)
	DumpAfter string // passes after which the module's HLO text is kept (MatchPasses; CompileResult.HLO)
	// PassStats records every pass's wall time and op count (CompileResult.PassStats).
	PassStats bool
	Out       string // where the effective config is written (empty: nowhere)
	Force     bool   // let Out overwrite a file that is not a config (outpath.CheckFile)
	Passes    string // the simplification passes (ParseSimplify; empty: the default pipeline)
	Pipeline  string // the simplification group (ParseSimplifyPipeline; empty: opt.DefaultSimplifyPipeline, "xla")
	Check     bool
	Fusion    FusionRule
	Staging   StagingMode
	// Dump, when set, receives the HLO text after DumpAfter as soon as that pass has run,
	// so that it is there even when a later pass or writing Out fails (the text output
	// streams it); nil: the text is kept in CompileResult.HLO (the JSON document's).
	Dump io.Writer
	// Load builds the module Src at Shapes (the CLI's: zoo.ResolveShapes); it runs after
	// the passes and Out are checked.
	Load func(src, shapes string) (*hlo.Module, error)
}

// Compile checks the passes and Out, loads the module, compiles it for target with the
// config file read under ctx (CompileFileContext) and writes Out; the result is the
// program's summary on chip (its name), with the HLO text after DumpAfter.
func (r CompileRequest) Compile(ctx context.Context, target cost.Target, chip string) (*CompileResult, error) {
	simp, err := ParseSimplifyPipeline(r.Pipeline, r.Passes)
	if err != nil {
		return nil, err
	}
	if r.Out != "" {
		if err := outpath.CheckFile("--out", r.Out, ConfigFileKind(), r.Force); err != nil {
			return nil, err
		}
	}
	if r.Load == nil {
		return nil, fmt.Errorf("compile: no Load")
	}
	m, err := r.Load(r.Src, r.Shapes)
	if err != nil {
		return nil, err
	}
	var kept strings.Builder
	dump := r.Dump
	if dump == nil {
		dump = &kept
	}
	var stats passStats
	var hooks []PassHook
	if r.PassStats {
		hooks = append(hooks, stats.hook())
	}
	p, err := CompileFileContext(ctx, m, r.Config, Options{Target: target, DumpAfter: r.DumpAfter, Dump: dump, AfterPass: hooks,
		Check: r.Check, Simplify: simp, Fusion: r.Fusion, Staging: r.Staging})
	if err != nil {
		return nil, err
	}
	if r.Out != "" {
		if err := WriteConfig(r.Out, p.Config); err != nil {
			return nil, err
		}
	}
	res := Summarize(p, chip, r.DumpAfter, kept.String())
	res.PassStats = stats.list
	return res, nil
}

// passStats records the PassStat of every run, in order.
type passStats struct{ list []PassStatRun }

// hook returns the PassHook that records every pass run in s.
func (s *passStats) hook() PassHook {
	return PassHook{After: func(_ *hlo.Module, run PassStat) error {
		s.list = append(s.list, PassStatRun{Name: run.Name, Iteration: run.Iteration, WallNS: run.Wall.Nanoseconds(),
			OpsBefore: run.OpsBefore, OpsAfter: run.OpCount})
		return nil
	}}
}

// ListedPasses names the passes of Passes (the simplify group as one), in order.
func ListedPasses() []string {
	var ns []string
	for _, p := range Passes() {
		ns = append(ns, p.Name)
	}
	return ns
}
