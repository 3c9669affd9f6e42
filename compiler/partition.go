package compiler

import (
	"fmt"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// FusionRule names how the fusion decisions a config leaves open are formed.
type FusionRule string

// The fusion rules. FusionXLA (the zero value's meaning) is the fusion pass's XLA-like
// instruction fusion heuristic (defaultFuse); FusionPartition is partition-based fusion
// after Apollo (Zhao et al., MLSys 2022), see PartitionConfig.
const (
	FusionXLA       FusionRule = "xla"
	FusionPartition FusionRule = "partition"
)

// FusionRules lists the rules, the default first.
func FusionRules() []FusionRule { return []FusionRule{FusionXLA, FusionPartition} }

// ParseFusionRule returns the rule named s ("" is an error: callers pass a flag's value,
// whose default is "xla").
func ParseFusionRule(s string) (FusionRule, error) {
	for _, r := range FusionRules() {
		if s == string(r) {
			return r, nil
		}
	}
	names := make([]string, 0, len(FusionRules()))
	for _, r := range FusionRules() {
		names = append(names, string(r))
	}
	return "", fmt.Errorf("unknown fusion rule %q (rules: %s)", s, strings.Join(names, ", "))
}

// partitionMaxSize bounds the instructions of one partition: the default heuristic's
// kernel bound, so that a partition is never cut by the fusion pass's size cap alone.
const partitionMaxSize = DefaultFusionSize

// partitionMember reports whether in belongs to a partition: every op that is part of a
// kernel (bitcasts included: inside kernels they are fused like any producer).
func partitionMember(in *hlo.Instruction) bool { return !isFree(in) || in.Opcode == hlo.OpBitcast }

// layoutOp reports whether in only moves or retypes data: what a dot or convolution
// reads its operands through (prologue). Arithmetic stays out of a prologue: a TPU
// matmul recomputes its prologue for every output tile, work the planned cost (the
// analytical roofline) does not see.
func layoutOp(in *hlo.Instruction) bool {
	switch in.Opcode {
	case hlo.OpConvert, hlo.OpBroadcast, hlo.OpBitcast, hlo.OpCopy, hlo.OpReshape, hlo.OpTranspose:
		return true
	}
	return false
}

// isCompute reports whether in is a compute-heavy op: what a partition grows around
// through its prologue and epilogue.
func isCompute(in *hlo.Instruction) bool {
	return in.Opcode == hlo.OpDot || in.Opcode == hlo.OpConvolution
}

// memoryBound reports whether in is a memory-bound op a partition grows through:
// elementwise and transcendental arithmetic, data movement, iota, gather and
// dynamic-slice (every fusible producer but the heroes).
func memoryBound(in *hlo.Instruction) bool {
	return fusibleProducer(in) && !isHero(in)
}

// partitionGraph is one flow computation's partitions: part[i] is the partition of
// instruction i, named by its first member's index (-1 for instructions no kernel holds:
// parameters, constants, tuples, control flow).
type partitionGraph struct {
	c    *hlo.Computation
	part []int
}

// formPartitions partitions flow computation c (laid out, not yet fused). It starts from
// the seed's kernels: every edge p -> x the seed fuses whose producer is not cheap to
// duplicate joins p and x (PartitionConfig's seed is the XLA-like compile, so that every
// XLA-like kernel lies within one partition and a partition's parts are its XLA-like
// kernels). It then grows the partitions by the partition rule, a union of producer ->
// consumer edges visited from the root up (consumers in reverse program order, each
// consumer's operands in order), each union kept only when the merged partition holds
// at most one hero (dot, convolution or reduce: one kernel's worth of expensive work)
// and at most partitionMaxSize instructions:
//
//   - into a dot or convolution, and into its prologue members (prologue): a producer
//     that only moves data (a transpose or a copy; layoutOp), read by no one else;
//   - out of a dot, convolution or reduce (epilogue): an elementwise consumer (or a
//     bitcast) of the same element count, when the hero has no other user;
//   - between memory-bound ops, and from a memory-bound op into a reduce or any other
//     kernel: when the producer has a single user, or when every user of the producer is
//     memory-bound or a reduce (sibling fusion: independent consumers of one input join
//     its partition, a multi-output partition);
//   - a bitcast joins its one consumer.
//
// An op that is cheap to duplicate (broadcast, iota, reshape, convert) takes part in no
// union of the rule, as producer or as consumer: like XLA, every consumer recomputes it
// (its edges keep the XLA-like default), and what it pulls into a kernel then never
// depends on a partition.
func formPartitions(c *hlo.Computation, seed func(p, x *hlo.Instruction) bool) *partitionGraph {
	n := len(c.Instructions)
	users := c.Users()
	parent := make([]int, n)
	size := make([]int, n)
	heroes := make([]int, n)
	for i, in := range c.Instructions {
		parent[i], size[i] = i, 1
		if isHero(in) {
			heroes[i] = 1
		}
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	join := func(a, b int, force bool) {
		ra, rb := find(a), find(b)
		if ra == rb || !force && (heroes[ra]+heroes[rb] > 1 || size[ra]+size[rb] > partitionMaxSize) {
			return
		}
		if rb < ra {
			ra, rb = rb, ra
		}
		parent[rb] = ra
		size[ra] += size[rb]
		heroes[ra] += heroes[rb]
	}
	union := func(a, b int) { join(a, b, false) }
	inC := func(x *hlo.Instruction) bool { return x.ID < n && c.Instructions[x.ID] == x }
	// The seed's kernels first, whole.
	for _, x := range c.Instructions {
		for _, p := range x.Operands {
			if inC(p) && partitionMember(p) && partitionMember(x) && !cheapToDuplicate(p) && seed(p, x) {
				join(p.ID, x.ID, true)
			}
		}
	}
	// The rule, consumers from the root up, so that a consumer's place on the operand
	// side of a dot or convolution (prologue) is known before its producers are met.
	prologue := make([]bool, n)
	for i := n - 1; i >= 0; i-- {
		x := c.Instructions[i]
		if !partitionMember(x) || cheapToDuplicate(x) && x.Opcode != hlo.OpBitcast {
			// A consumer cheap to duplicate is recomputed in its consumers' kernels
			// (the XLA-like default): what it pulls in must not depend on a partition.
			continue
		}
		for _, p := range x.Operands {
			if !inC(p) || !partitionMember(p) || !p.Shape.IsArray() || !fusibleProducer(p) {
				continue
			}
			us := users[p.ID]
			switch {
			case isCompute(x) || prologue[x.ID]:
				if len(us) == 1 && layoutOp(p) && !cheapToDuplicate(p) {
					union(p.ID, x.ID)
				}
				if find(p.ID) == find(x.ID) {
					prologue[p.ID] = true
				}
			case p.Opcode == hlo.OpBitcast:
				// Always fused into its kernels: it belongs with its one consumer.
				if len(us) == 1 {
					union(p.ID, x.ID)
				}
			case cheapToDuplicate(p):
			case isHero(p):
				if len(us) == 1 && (x.Opcode.IsElementwise() || x.Opcode == hlo.OpBitcast) && x.Shape.IsArray() && x.Shape.Elements() == p.Shape.Elements() {
					union(p.ID, x.ID)
				}
			case memoryBound(p):
				siblings := true
				for _, u := range us {
					siblings = siblings && (memoryBound(u) || u.Opcode == hlo.OpReduce)
				}
				if len(us) == 1 || siblings {
					union(p.ID, x.ID)
				}
			}
		}
	}
	g := &partitionGraph{c: c, part: make([]int, n)}
	for i, x := range c.Instructions {
		g.part[i] = -1
		if partitionMember(x) {
			g.part[i] = find(i)
		}
	}
	return g
}

// PartitionStats describes what PartitionConfig did: the partitions of two or more
// instructions it formed, how many of them the feedback split (their fused kernels were
// slower than their parts), and the program's planned cost (the sum over kernels of
// weight × the analytical time of the kernel's planned default tile, the best of its
// options under the analytical model; cost.Planned.Analytical) under the XLA-like
// defaults, with every partition fused, and as returned.
type PartitionStats struct {
	Partitions int
	Split      int
	XLANs      float64
	FusedNs    float64
	ChosenNs   float64
}

// PartitionConfig returns cfg (nil: empty) with a fusion entry for every configurable
// edge of m's program that cfg does not set, chosen by partition-based fusion (after
// Apollo, Zhao et al., MLSys 2022), and what it did:
//
//  1. Partition: every flow computation, laid out as cfg's layout entries say, is
//     partitioned by formPartitions, seeded with the XLA-like compile's kernels (so a
//     partition's parts are XLA-like kernels) and grown by the partition rule (around
//     dots and convolutions through memory-bound neighbours; sibling consumers of one
//     input join it; a partition with several outputs becomes one kernel per output, the
//     shared producers duplicated into each).
//  2. Candidate kernels: the edges inside a partition are fused and the edges between
//     partitions are not (a producer cheap to duplicate follows the XLA-like default);
//     the parts of a partition are the XLA-like default decisions on its inner edges.
//     Both are compiled and every kernel is tiled as the tiling pass tiles it: its cost is
//     its weight × the analytical time of its planned default tile (the argmin of the
//     analytical model over its tile options), summed per partition (the partition of
//     the kernel's root: kernels never cross partitions, so costs add up per partition).
//  3. Feedback (Apollo's upward feedback from the loop optimizer): a partition whose
//     fused kernels cost more than its parts is split into its parts.
//
// cfg's own fusion entries win over the rule in every step. Compiles use opts without
// its store, its dump and its check (the tile costs are the planned defaults);
// opts.Kernels, when set, shares their analyses with later compiles.
func PartitionConfig(m *hlo.Module, cfg *Config, opts Options) (*Config, PartitionStats, error) {
	var st PartitionStats
	base := opts
	base.Fusion, base.Store, base.Strict, base.Check, base.DumpAfter, base.Dump, base.AfterPass = FusionXLA, nilStore{}, false, false, "", nil, nil
	if base.Kernels == nil {
		base.Kernels = &KernelCache{}
	}
	if err := base.Target.Validate(); err != nil {
		return nil, st, err
	}
	// The trial configs keep cfg's layout entries (they shape the graph) and fusion
	// entries (they win), and no tiles or flags (the tiles are the planned defaults).
	trial := NewConfig()
	for _, k := range []Kind{KindLayout, KindFusion} {
		for _, name := range cfg.Names(k) {
			e, _ := cfg.Get(k, name)
			trial.Set(k, name, e)
		}
	}
	if cfg != nil {
		trial.OperandLayout = cfg.Clone().OperandLayout
	}

	// The graph the fusion pass sees: prepared and laid out.
	passes, err := base.Simplify.apply(Passes())
	if err != nil {
		return nil, st, err
	}
	prep := prepare(m, base, passes[:prefixLen(passes)], nil)
	if prep.err != nil {
		return nil, st, m.Wrap(prep.err)
	}
	mod := prep.mod.Clone()
	s, err := newState(mod, trial, base)
	if err != nil {
		return nil, st, m.Wrap(err)
	}
	if _, err := runLayout(mod, s); err != nil {
		return nil, st, m.Wrap(fmt.Errorf("pass layout-assignment: %w", err))
	}
	xla, err := Compile(m, trial, base)
	if err != nil {
		return nil, st, err
	}
	xlaChosen := map[string]bool{} // the XLA-like compile's decisions
	for _, f := range xla.Space.Fusion {
		xlaChosen[f.Name] = f.Chosen
	}

	type edge struct {
		name      string
		part      string // the partition holding both ends; "" between partitions
		duplicate bool   // the producer is cheap to duplicate: XLA-like default
	}
	var edges []edge
	partOf := map[string]string{} // qualified instruction name -> partition label
	size := map[string]int{}
	for _, c := range s.Flow {
		g := formPartitions(c, func(p, x *hlo.Instruction) bool { return xlaChosen[s.qualName(c, EdgeName(p, x))] })
		users := c.Users()
		label := func(i int) string {
			if g.part[i] < 0 {
				return ""
			}
			return s.qualName(c, c.Instructions[g.part[i]].Name)
		}
		for i, x := range c.Instructions {
			if l := label(i); l != "" {
				partOf[s.qualName(c, x.Name)] = l
				size[l]++
			}
			if isFree(x) && x.Opcode != hlo.OpBitcast {
				continue
			}
			for _, p := range x.Operands {
				if p.ID >= len(c.Instructions) || c.Instructions[p.ID] != p || !p.Shape.IsArray() ||
					!fusionConfigurable(p, len(users[p.ID])) || isFree(p) {
					continue
				}
				e := edge{name: s.qualName(c, EdgeName(p, x)), duplicate: cheapToDuplicate(p)}
				if lp := label(p.ID); lp != "" && lp == label(x.ID) {
					e.part = lp
				}
				edges = append(edges, e)
			}
		}
	}
	for _, n := range size {
		if n > 1 {
			st.Partitions++
		}
	}

	// decide builds the trial config where the partitions in fused are fused and the
	// others take their parts.
	decide := func(fused func(part string) bool) *Config {
		c := trial.Clone()
		for _, e := range edges {
			if _, ok := trial.Get(KindFusion, e.name); ok {
				continue
			}
			v := false
			switch {
			case e.duplicate:
				v = xlaChosen[e.name]
			case e.part != "":
				v = fused(e.part) || xlaChosen[e.name]
			}
			c.Set(KindFusion, e.name, Entry{Fusion: v})
		}
		return c
	}
	partCost := func(p *Program) (map[string]float64, float64) {
		out := map[string]float64{}
		total := 0.0
		entry := p.Module.Entry.Name
		for _, k := range p.Kernels {
			name := k.Root
			if k.Computation != entry {
				name = k.Computation + "/" + k.Root
			}
			ns := k.Weight * k.Choice.Analytical()
			out[partOf[name]] += ns
			total += ns
		}
		return out, total
	}
	fusedProg, err := Compile(m, decide(func(string) bool { return true }), base)
	if err != nil {
		return nil, st, err
	}
	partsProg, err := Compile(m, decide(func(string) bool { return false }), base)
	if err != nil {
		return nil, st, err
	}
	fusedCost, fusedTotal := partCost(fusedProg)
	partsCost, _ := partCost(partsProg)
	split := map[string]bool{}
	for part, n := range size {
		if n > 1 && fusedCost[part] > partsCost[part] {
			split[part] = true
			st.Split++
		}
	}
	final, err := Compile(m, decide(func(part string) bool { return !split[part] }), base)
	if err != nil {
		return nil, st, err
	}
	_, st.ChosenNs = partCost(final)
	_, st.XLANs = partCost(xla)
	st.FusedNs = fusedTotal
	out := cfg.Clone()
	for _, f := range final.Space.Fusion {
		if _, ok := out.Get(KindFusion, f.Name); !ok {
			out.Set(KindFusion, f.Name, Entry{Fusion: f.Chosen})
		}
	}
	return out, st, nil
}
