// Package spmd partitions a GSPMD module (one global program with sharding
// annotations, as JAX dumps it before XLA's optimizations) into the program one device
// runs: per-device shapes and the collectives XLA's SPMD partitioner inserts
// (xla/service/spmd/spmd_partitioner.cc, dot_handler.cc, gather_scatter_handler.cc).
// The result is an ordinary module whose collectives the compiler schedules and the
// simulator times like any other; this package times nothing.
package spmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
)

// Result describes a partitioning.
type Result struct {
	// Partitions is the number of devices the per-device program runs on.
	Partitions int
	// Collectives counts the collectives inserted, by kind.
	Collectives map[string]int
}

// Annotated reports whether m carries a sharding on any instruction: a module that is
// partitioned already (per-device shapes, explicit collectives) carries none.
func Annotated(m *hlo.Module) bool {
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if in.Sharding != nil {
				return true
			}
		}
	}
	return false
}

// NumPartitions is the module header's num_partitions. A header without one (XLA's
// benchmark dumps: their runner is told the count, --num_partitions) takes the number
// of devices the first tiled sharding annotation names, as XLA would be told to run it
// on (the others must agree: Partition checks each against it); 1 when there is none.
func NumPartitions(m *hlo.Module) int {
	for _, a := range m.Attrs {
		if a.Key == "num_partitions" {
			if v, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && v > 0 {
				return v
			}
		}
	}
	for _, c := range m.Computations {
		for _, in := range c.Instructions {
			if n := tiledDevices(in.Sharding); n > 0 {
				return n
			}
		}
	}
	return 1
}

// tiledDevices is the number of devices the first tiled sharding in s names (s itself
// or a tuple sharding's leaf), 0 when it has none.
func tiledDevices(s *hlo.Sharding) int {
	if s == nil {
		return 0
	}
	if s.Kind == hlo.ShardTiled {
		return s.NumDevices()
	}
	for _, e := range s.Tuple {
		if n := tiledDevices(e); n > 0 {
			return n
		}
	}
	return 0
}

// Partition returns the per-device program of m on n devices (n = 0: the header's
// num_partitions), or nil when there is nothing to partition: m carries no sharding (a
// module that is partitioned already, or was never sharded). m is not modified.
//
// n = 1 (asked for, or a header of num_partitions=1) is one device running the whole
// global program: every annotation is re-tiled onto one device, so the result has the
// global shapes, no collectives, the sharding custom-calls dropped and num_partitions=1
// in its header (the chips its compute spans), and Result.Partitions is 1.
//
// Shardings are read as annotated and propagated to the other instructions (see
// propagate.go); every value then has a per-device shape (each tiled dimension
// ceil-divided by its tile count). Where an operand's sharding differs from what its
// user needs, it is resharded: all-gather along a dimension that is tiled but needed
// whole, all-to-all when the tiling moves from one dimension to another, a local slice
// (no communication) when a whole dimension is needed tiled. A dot or convolution whose
// contracting dimension is tiled computes partial sums: an all-reduce, or a
// reduce-scatter when the result is needed tiled along an output dimension by the same
// devices; likewise a reduce over a tiled dimension, and a gather from an operand tiled
// along its indexed dimension (each device gathers the rows it holds). Collectives
// group the devices that hold the pieces: replica_groups of size k.
//
// n must divide the header's num_partitions: annotations are re-tiled onto n devices
// (retile). A module without annotations takes only n = 0 or its num_partitions (it is
// compiled as written); another n is an error. Errors name the annotation's line:col:
// a sharding naming another number of devices than num_partitions, a tile assignment
// that cannot be spread over n devices, an n that does not divide num_partitions,
// manual (shard_map) regions re-tiled. Every error is one line, as hlo.Module.Wrap
// makes it: file:line:col of the sharding or instruction it is about, else of the
// module's header.
func Partition(m *hlo.Module, n int) (*hlo.Module, *Result, error) {
	pm, res, err := partition(m, n)
	if err != nil {
		return nil, nil, m.Wrap(err)
	}
	return pm, res, nil
}

func partition(m *hlo.Module, n int) (*hlo.Module, *Result, error) {
	if n < 0 {
		return nil, nil, fmt.Errorf("--partitions %d: want a positive number of devices", n)
	}
	p := NumPartitions(m)
	if !Annotated(m) {
		if n != 0 && n != p {
			return nil, nil, fmt.Errorf("--partitions %d: the module carries no sharding annotations: it is compiled as written, for num_partitions=%d (already per-device, or never sharded)", n, p)
		}
		return nil, nil, nil
	}
	if n == 0 {
		n = p
	}
	if n > p || p%n != 0 {
		return nil, nil, fmt.Errorf("--partitions %d: the module is annotated for num_partitions=%d; n must divide it", n, p)
	}
	mod := m.Clone()
	if inl, err := opt.Lookup("call-inliner"); err == nil {
		if _, err := inl.Run(mod); err != nil {
			return nil, nil, fmt.Errorf("spmd: inlining calls: %w", err)
		}
	}
	pt := &partitioner{m: mod, p: p, n: n, sh: map[*hlo.Instruction]*spec{}, fixed: map[*hlo.Instruction]bool{},
		res: &Result{Partitions: n, Collectives: map[string]int{}}, names: map[string]bool{}}
	if err := pt.collectFlow(); err != nil {
		return nil, nil, err
	}
	if err := pt.annotations(); err != nil {
		return nil, nil, err
	}
	pt.propagate()
	if err := pt.lower(); err != nil {
		return nil, nil, err
	}
	for _, c := range mod.Computations {
		for _, in := range c.Instructions {
			in.Sharding = nil
		}
		c.Renumber()
	}
	attrs := mod.Attrs[:0]
	seen := false
	for _, a := range mod.Attrs {
		switch a.Key {
		case "entry_computation_layout": // the global shapes: no longer the program's
			continue
		case "num_partitions":
			a.Value, seen = strconv.Itoa(n), true
		}
		attrs = append(attrs, a)
	}
	if !seen {
		attrs = append(attrs, hlo.Attr{Key: "num_partitions", Value: strconv.Itoa(n)})
	}
	mod.Attrs = attrs
	return mod, pt.res, nil
}

type partitioner struct {
	m     *hlo.Module
	p, n  int
	flow  []*hlo.Computation // callees before callers
	cond  map[*hlo.Computation]bool
	sh    map[*hlo.Instruction]*spec // the propagated (target) spec of each value
	fixed map[*hlo.Instruction]bool  // annotated: propagation leaves it
	res   *Result
	names map[string]bool
	adds  map[hlo.ElemType]*hlo.Computation
	chans int

	// Lowering state.
	global map[*hlo.Instruction]hlo.Shape // global shapes, before lowering
	cur    map[*hlo.Instruction]*spec     // the spec a lowered value actually has
	out    []*hlo.Instruction             // the computation being lowered
	// aliases maps a lowered instruction to the value its users read instead (after a
	// reshard of its result, or for an identity custom-call that is dropped).
	aliases map[*hlo.Instruction]*hlo.Instruction
}

// collectFlow lists the computations that run as programs: the entry, loop bodies and
// conditions, conditional branches (callees first).
func (pt *partitioner) collectFlow() error {
	pt.cond = map[*hlo.Computation]bool{}
	seen := map[*hlo.Computation]bool{}
	var visit func(c *hlo.Computation) error
	visit = func(c *hlo.Computation) error {
		if seen[c] {
			return nil
		}
		seen[c] = true
		for _, in := range c.Instructions {
			pt.names[in.Name] = true
			switch in.Opcode {
			case hlo.OpWhile:
				if err := visit(in.Condition); err != nil {
					return err
				}
				if err := visit(in.Body); err != nil {
					return err
				}
			case hlo.OpConditional:
				br, err := hlo.BranchComputations(pt.m, in)
				if err != nil {
					return err
				}
				for _, b := range br {
					pt.cond[b] = true
					if err := visit(b); err != nil {
						return err
					}
				}
			}
		}
		pt.flow = append(pt.flow, c)
		return nil
	}
	for _, c := range pt.m.Computations {
		for _, in := range c.Instructions {
			pt.names[in.Name] = true
		}
	}
	return visit(pt.m.Entry)
}

// annotations reads every sharding of the flow computations into fixed specs.
func (pt *partitioner) annotations() error {
	hasManual := false
	for _, c := range pt.flow {
		for _, in := range c.Instructions {
			sh := in.Sharding
			if sh == nil {
				continue
			}
			pos := in.Name
			shape := in.Shape
			if in.Opcode == hlo.OpCustomCall && target(in) == "SPMDFullToShardShape" {
				hasManual = true
			}
			s, err := fromSharding(sh, shape, pt.p, pt.n, pos)
			if err != nil {
				if sh.Line > 0 { // the sharding's own position (Module.Wrap names the file)
					return hlo.AtPos(sh.Line, sh.Col, err)
				}
				return hlo.At(in, err)
			}
			if s != nil && s.manual {
				hasManual = true
			}
			if s != nil {
				pt.sh[in], pt.fixed[in] = s, true
			}
		}
	}
	if hasManual && pt.n != pt.p {
		return fmt.Errorf("--partitions %d: the module has manual (shard_map) regions written for num_partitions=%d; they cannot be re-tiled", pt.n, pt.p)
	}
	return nil
}

func target(in *hlo.Instruction) string {
	v, _ := in.ExtraAttr("custom_call_target")
	return strings.Trim(v, `"`)
}
