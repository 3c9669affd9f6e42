package tune

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
)

// kernelGroup is the kernels of a program that share one key (and so one tile and flags
// decision).
type kernelGroup struct {
	k      *compiler.Kernel // the first kernel with the key
	count  int
	weight float64 // count * best known time of its current configuration
}

// groups lists the distinct kernels of p, heaviest first (by count times the best known
// time of their current configuration; unknown times weigh 0), ties in program order.
func (r *run) groups(p *compiler.Program) []*kernelGroup {
	byKey := map[string]*kernelGroup{}
	var out []*kernelGroup
	for _, k := range p.Kernels {
		if g, ok := byKey[k.Key]; ok {
			g.count++
			continue
		}
		g := &kernelGroup{k: k, count: 1}
		byKey[k.Key] = g
		out = append(out, g)
	}
	for _, g := range out {
		g.weight = float64(g.count) * r.kernTime[g.k.Choice.ID()]
	}
	slices.SortStableFunc(out, func(a, b *kernelGroup) int { return cmpFloat(b.weight, a.weight) })
	return out
}

// kernelOptions lists the options of kernel k for a kernel-level phase, planned: for
// tiles, every valid tile with the flags candidate repair gives it (the compiler's default
// for that tile: measuring every tile with the kernel's current flags would judge a
// multi-step tile by a single-step kernel's single buffer); for flags, every flag
// combination valid with the kernel's tile. The tile options come with the plans the
// compiler made when it listed them. cur is the index of the kernel's current
// configuration, -1 if it is not among them.
func kernelOptions(p *compiler.Program, k *compiler.Kernel, kind compiler.Kind) (opts []cost.Planned, cur int) {
	cur = -1
	switch kind {
	case compiler.KindTile:
		for i := range p.Space.Tile {
			c := &p.Space.Tile[i]
			if c.Key != k.Key {
				continue
			}
			for _, o := range c.Planned() {
				if len(o.FlagOptions()) == 0 {
					continue
				}
				o, err := o.WithFlags(compiler.DefaultFlagsFor(o))
				if err != nil {
					continue
				}
				if o.Config.Tile.Equal(k.Choice.Config.Tile) && o.Config.Flags == k.Choice.Config.Flags {
					cur = len(opts)
				}
				opts = append(opts, o)
			}
		}
	case compiler.KindFlags:
		for _, f := range k.Choice.FlagOptions() {
			o, err := k.Choice.WithFlags(f)
			if err != nil {
				continue
			}
			if f == k.Choice.Config.Flags {
				cur = len(opts)
			}
			opts = append(opts, o)
		}
	}
	return opts, cur
}

// kernelWork is the number of measurements a kernel-level phase would take on p with
// unlimited budget: every option of each distinct kernel, or the top k with a model.
func (r *run) kernelWork(p *compiler.Program, kind compiler.Kind) int {
	n := 0
	for _, g := range r.groups(p) {
		opts, _ := kernelOptions(p, g.k, kind)
		if len(opts) < 2 {
			continue
		}
		if r.kernelModel != nil {
			n += min(len(opts), r.opts.TopKKernel)
		} else {
			n += len(opts)
		}
	}
	return n
}

// tuneKernels is one kernel-level phase of the XTAT schedule. For each distinct kernel of
// inc's program, heaviest first, it evaluates the options of one kind (tiles, or flags)
// by measuring the kernel alone on the simulator and keeps the fastest. Without a kernel
// model every option is measured (exhaustive per kernel); with one, the model ranks all
// options and only its top k are measured. The kernel's current configuration competes
// with its best known time. The phase spends at most capN measurements; kernels it
// cannot reach keep their configuration. It returns the recompiled program.
func (r *run) tuneKernels(ctx context.Context, inc *candidate, kind compiler.Kind, capN int) (*candidate, error) {
	p := inc.prog
	cfg := inc.cfg.Clone()
	est := inc.value
	for _, g := range r.groups(p) {
		if capN <= 0 || r.left() <= 0 {
			break
		}
		k := g.k
		opts, cur := kernelOptions(p, k, kind)
		if len(opts) < 2 {
			continue
		}
		order := make([]int, len(opts))
		for i := range order {
			order[i] = i
		}
		if r.kernelModel != nil {
			scores, err := r.kernelModel.score(k, opts)
			if err != nil {
				return nil, err
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(scores[a], scores[b]) })
			k := r.opts.TopKKernel
			if sp, ok := r.kernelModel.spreadOf(opts[order[0]]); ok {
				r.modelKernels++
				if sp > r.opts.UncertainSpread {
					// An ensemble unsure of its pick: measure twice as many of its options.
					r.uncertainKernels++
					k *= 2
				}
			}
			order = order[:min(len(order), k)]
		}
		measure := make([]cost.Planned, len(order))
		for j, i := range order {
			measure[j] = opts[i]
		}
		got, err := r.measureKernels(ctx, k, measure, &capN)
		if err != nil {
			return nil, err
		}
		curID := k.Choice.ID()
		curNs, ok := r.kernCache[curID]
		if !ok {
			curNs, ok = r.kernTime[curID]
		}
		if !ok {
			curNs = math.Inf(1)
		}
		best, bestNs := -1, curNs
		for j, v := range got {
			if !math.IsNaN(v) && v < bestNs {
				best, bestNs = order[j], v
			}
		}
		if best < 0 || best == cur {
			continue
		}
		cfg.Tile[k.Key] = slices.Clone(opts[best].Config.Tile)
		cfg.Flags[k.Key] = opts[best].Config.Flags
		if !math.IsInf(curNs, 1) {
			est -= float64(g.count) * (curNs - bestNs)
			r.bestNs = math.Min(r.bestNs, est)
		}
		r.progress()
	}
	c, err := r.cc.compile(cfg)
	if err != nil {
		return nil, err
	}
	for _, k := range c.prog.Kernels {
		if want, ok := cfg.Tile[k.Key]; ok && !want.Equal(k.Choice.Config.Tile) {
			return nil, fmt.Errorf("kernel %s: tuned tile %s was repaired to %s", k.Name, want, k.Choice.Config.Tile)
		}
		if want, ok := cfg.Flags[k.Key]; ok && want != k.Choice.Config.Flags {
			return nil, fmt.Errorf("kernel %s: tuned flags %s were repaired to %s", k.Name, want, k.Choice.Config.Flags)
		}
	}
	c.value = est
	return c, nil
}
