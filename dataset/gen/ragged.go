package gen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/measure"
	"github.com/tpucost/tpucost/internal/stablehash"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// # Ragged datasets (gen --lengths; docs/ragged.md, docs/datasets.md)
//
// With Options.Lengths every model is generated over each batch of lengths as its compiled
// ragged program (after CoRa): the program MODEL@lengths=SPEC is the model's ragged form
// at batch N = len(lengths) and the longest length, compiled with default configs and
// lowered (compiler.PlanRagged) into dense, packed, per-sequence and pad kernels, and
// timed from its parts (ragged.Parts.Time, sim --lengths' ragged_ns). A unit is one
// program; a row is one distinct kernel of it, its one config the default compile's
// choice, its runtime the kernel's compiled ragged time (ragged.KernelReport.Ns, with
// the measurement noise of the kernel's choice applied when Noise is on) and its
// analytical estimate the analytical model of the same ragged work
// (KernelReport.AnalyticalNs). Its graph is the ragged form's kernel featurized with the
// ragged extent (features.OfRaggedKernel: the kind, the offsets read, the lengths' mean,
// max and spread, the packed rows, the sequences). The same kernel graph runs for
// different times over different batches, so a ragged row's key is the kernel's key and
// the batch's (raggedKey): rows of different batches are distinct rows.

// validateLengths checks Options.Lengths: each batch a valid --lengths form, listed once,
// and the settings a ragged program does not take refused (one line each, naming the
// flags).
func (o *Options) validateLengths() error {
	if len(o.Lengths) == 0 {
		return nil
	}
	switch {
	case o.Task != dataset.TaskFusion || o.Configs != 1:
		return fmt.Errorf("--lengths: the ragged program is generated at its default compile, each kernel measured once: want --task fusion --configs 1 (got --task %s --configs %d)", o.Task, o.Configs)
	case o.Shapes != "":
		return errors.New("--lengths sizes every sequence itself: drop --shapes")
	case o.Fusion != "" && o.Fusion != compiler.FusionXLA:
		return fmt.Errorf("--lengths times default compiles at every length: --fusion %s is not supported here (drop --fusion)", o.Fusion)
	case o.Staging != compiler.StagingOff:
		return fmt.Errorf("--lengths times default compiles at every length: --staging %s is not supported here (drop --staging)", o.Staging)
	}
	for i, spec := range o.Lengths {
		if _, err := ragged.ParseLengths(spec); err != nil {
			return fmt.Errorf("--lengths: %w", err)
		}
		if slices.Index(o.Lengths, spec) != i {
			return fmt.Errorf("--lengths: %s is listed twice", spec)
		}
	}
	return nil
}

// raggedPrograms are the programs of a run with Lengths: MODEL@lengths=SPEC for every
// model, in the order given, each over every batch in the order given.
func (o *Options) raggedPrograms() ([]string, map[string]sizedProgram) {
	by := map[string]sizedProgram{}
	var names []string
	for _, m := range o.Models {
		for _, spec := range o.Lengths {
			name := m + "@lengths=" + spec
			names = append(names, name)
			by[name] = sizedProgram{src: m, lengths: spec}
		}
	}
	return names, by
}

// withLengths is p of a run over the batches lengths: with them, its feature set is
// features.RaggedSet (RaggedSchema); p itself without.
func withLengths(p dataset.Provenance, lengths []string) dataset.Provenance {
	if len(lengths) == 0 {
		return p
	}
	p.Lengths = slices.Clone(lengths)
	p.FeatureSet, p.FeatureSchema = features.RaggedSet, features.RaggedSchema()
	return p
}

// raggedParts returns the parts of ragged program name (MODEL@lengths=SPEC), built once
// per run: a model without a ragged form, or a length it cannot take, is an error naming
// both.
func (g *generator) raggedParts(name string) (*ragged.Parts, error) {
	so := g.entry(name)
	so.ragged.Do(func() {
		sp := g.opts.sized[name]
		so.parts, so.partsErr = buildParts(sp.src, sp.lengths, g.opts)
	})
	return so.parts, so.partsErr
}

// buildParts builds the parts of zoo model src's ragged program over the batch spec.
func buildParts(src, spec string, o Options) (*ragged.Parts, error) {
	lengths, err := ragged.ParseLengths(spec) // checked by Validate
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	m, err := ragged.LookupZoo(src)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	if !m.Raggable() {
		return nil, fmt.Errorf("--lengths: %s has no ragged form (gen --lengths takes bert_* and gpt2_* zoo models)", src)
	}
	for _, l := range lengths {
		if _, err := m.WithShapes(zoo.Shapes{{Name: "seq", Value: l}}); err != nil {
			return nil, fmt.Errorf("--lengths %s: %w", spec, err)
		}
	}
	p, err := ragged.NewParts(m, lengths, o.Chip)
	if err != nil {
		return nil, fmt.Errorf("--lengths %s: %s: %w", spec, src, err)
	}
	return p, nil
}

// raggedKey is the key of a ragged row: the kernel's key and the batch's lengths.
func raggedKey(kernelKey string, lengths []int) string {
	h := stablehash.New()
	for _, l := range lengths {
		h.Uint64(uint64(l))
	}
	return kernelKey + "|lengths=" + strconv.Itoa(len(lengths)) + ":" + h.Hex()
}

// raggedUnit compiles ragged program name (unit u) and writes a row for each of its
// distinct kernels, timed by the compiled ragged timing.
func (g *generator) raggedUnit(u int64, name string) (res unitResult) {
	res = unitResult{unit: u}
	defer g.done(name)
	defer func() {
		if p := recover(); p != nil {
			res = unitResult{unit: u, err: fmt.Errorf("unit %d (%s): internal error: %v", u, name, p)}
		}
	}()
	fail := func(err error) unitResult {
		return unitResult{unit: u, err: fmt.Errorf("unit %d (%s): %w", u, name, err)}
	}
	t0 := time.Now()
	parts, err := g.raggedParts(name)
	if err != nil {
		return fail(err)
	}
	progs, err := parts.CompileDefault()
	if err != nil {
		return fail(err)
	}
	res.compileS = time.Since(t0).Seconds()
	t1 := time.Now()
	timed, err := parts.Time(progs)
	if err != nil {
		return fail(err)
	}
	plan, err := compiler.PlanRagged(progs.Ragged)
	if err != nil {
		return fail(err)
	}
	res.simulateS = time.Since(t1).Seconds()
	salt := stablehash.New().Label("ragged").Str(ragged.FormatLengths(parts.Lengths)).Sum64()
	counts := map[string]int32{}
	var order []int
	for i, k := range progs.Ragged.Kernels {
		key := raggedKey(k.Key, parts.Lengths)
		if counts[key] == 0 {
			order = append(order, i)
		}
		counts[key]++
	}
	t := g.opts.Chip.Target
	for _, i := range order {
		k, kr, rk := progs.Ragged.Kernels[i], timed.Kernels[i], plan.Kernels[i]
		key := raggedKey(k.Key, parts.Lengths)
		res.occ = append(res.occ, dataset.Occurrence{Unit: u, Program: name, KernelKey: key, Count: counts[key]})
		if g.written.has(key) {
			continue
		}
		ns := kr.Ns
		if g.opts.Noise.NoiseSigma != 0 {
			// The kernel's measurement noise: its choice measured through measure.Run on
			// g.backend (the simulator: MeasureChoice's noisy time), over its noiseless time.
			ms, err := measure.Run(context.Background(), g.backend(salt), []cost.Planned{k.Choice}, measure.Options{Seed: measureSeed(g.opts.Seed, key)})
			if err != nil {
				return fail(fmt.Errorf("kernel %s: %w", k.Name, err))
			}
			kt, err := tpusim.SimulateChoice(k.Choice, g.sim.Chip())
			if err != nil {
				return fail(fmt.Errorf("kernel %s: %w", k.Name, err))
			}
			ns *= ms[0].MedianNs / kt.Ns
		}
		t2 := time.Now()
		row := dataset.Row{Program: name, Unit: u, Task: g.opts.Task, KernelKey: key, KernelName: k.Name, Kind: k.Kind,
			Graph:        features.OfRaggedKernel(k, t, rk.Kind, rk.Offsets, parts.Lengths),
			Configs:      []string{k.Choice.Config.String()},
			ConfigFeats:  [][]float32{features.Config(k.Choice)},
			RuntimesNs:   []float64{ns},
			AnalyticalNs: []float64{kr.AnalyticalNs},
		}
		res.featurizeS += time.Since(t2).Seconds()
		res.rows = append(res.rows, row)
	}
	return res
}
