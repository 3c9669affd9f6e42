package compiler

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Collective kinds, named as their HLO opcodes.
const (
	CollAllReduce         = "all-reduce"
	CollAllGather         = "all-gather"
	CollReduceScatter     = "reduce-scatter"
	CollAllToAll          = "all-to-all"
	CollCollectivePermute = "collective-permute"
)

// Collective is a cross-chip collective. Bytes is the size the ring fractions apply to:
// the operand of all-reduce, reduce-scatter, all-to-all and collective-permute, the
// (gathered) result of all-gather. GroupSize is the number of chips in each replica
// group; 0 means all chips of the program (replica_groups={} or none, as PyTorch/XLA
// writes them). Devices is how many devices its groups name together (ids 0..Devices-1):
// 16 for {{0,...,7},{8,...,15}}; 0 when no group is named.
type Collective struct {
	Name      string
	Kind      string
	Bytes     float64
	GroupSize int
	Devices   int
	// Async marks a -start: the transfer overlaps the steps up to its Done step.
	Async bool
}

// collectiveKind maps an instruction to its collective kind by opcode name, so that the
// collective opcodes (and their -start halves) are recognised as soon as the IR has them;
// a -done half does nothing of its own (ok with kind "").
func collectiveKind(in *hlo.Instruction) (kind string, ok bool) {
	name := in.Opcode.String()
	if strings.HasSuffix(name, "-done") {
		base := strings.TrimSuffix(name, "-done")
		switch base {
		case CollAllReduce, CollAllGather, CollReduceScatter, CollAllToAll, CollCollectivePermute:
			return "", true
		}
		return "", false
	}
	name = strings.TrimSuffix(name, "-start")
	switch name {
	case CollAllReduce, CollAllGather, CollReduceScatter, CollAllToAll, CollCollectivePermute:
		return name, true
	}
	return "", false
}

// arrayBytes sums the bytes of the arrays in s (tuples included).
func arrayBytes(s hlo.Shape) float64 {
	if s.IsTuple() {
		t := 0.0
		for _, e := range s.Tuple {
			t += arrayBytes(e)
		}
		return t
	}
	if !s.IsArray() {
		return 0
	}
	return float64(s.Bytes())
}

func newCollective(in *hlo.Instruction, kind string) (*Collective, error) {
	c := &Collective{Name: in.Name, Kind: kind}
	for _, op := range in.Operands {
		c.Bytes += arrayBytes(op.Shape)
	}
	if kind == CollAllGather {
		c.Bytes = arrayBytes(in.Shape)
		if in.Shape.IsTuple() && strings.HasSuffix(in.Opcode.String(), "-start") && len(in.Shape.Tuple) == 2 {
			c.Bytes = arrayBytes(in.Shape.Tuple[1]) // (operand, result) of an async start
		}
	}
	if v, ok := in.ExtraAttr("replica_groups"); ok {
		k, n, err := ReplicaGroups(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		c.GroupSize, c.Devices = k, n
	}
	return c, nil
}

var iotaGroups = regexp.MustCompile(`^\[([0-9,\s]+)\]\s*<=\s*\[([0-9,\s]+)\](T\([0-9,\s]+\))?$`)

// ReplicaGroupSize returns the number of chips in each group of a replica_groups
// attribute: "{{0,1,2,3},{4,5,6,7}}" (explicit groups, which must have equal sizes),
// "[2,4]<=[8]" (iota form: the last dimension is the group size) or "{}" (0: all chips).
func ReplicaGroupSize(v string) (int, error) {
	k, _, err := ReplicaGroups(v)
	return k, err
}

// ReplicaGroups returns the group size of a replica_groups attribute (as
// ReplicaGroupSize) and the number of devices its groups span: the largest id + 1 of
// explicit groups, the product of the iota form's device dimensions ("[2,4]<=[8]": 8).
// Both are 0 for "{}".
func ReplicaGroups(v string) (size, devices int, err error) {
	v = strings.TrimSpace(v)
	if m := iotaGroups.FindStringSubmatch(v); m != nil {
		dims := strings.Split(m[1], ",")
		k, err := strconv.Atoi(strings.TrimSpace(dims[len(dims)-1]))
		if err != nil || k <= 0 {
			return 0, 0, fmt.Errorf("replica_groups %q: bad group size", v)
		}
		n := 1
		for _, d := range strings.Split(m[2], ",") {
			x, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || x <= 0 || x > 1<<20 {
				return 0, 0, fmt.Errorf("replica_groups %q: bad device count", v)
			}
			n *= x
			if n > 1<<20 {
				return 0, 0, fmt.Errorf("replica_groups %q: more than 2^20 devices", v)
			}
		}
		return k, n, nil
	}
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return 0, 0, fmt.Errorf("replica_groups %q: expected {{...},...} or [groups,size]<=[n]", v)
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return 0, 0, nil
	}
	size = -1
	for _, g := range strings.Split(inner, "}") {
		g = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(g), ","))
		if g == "" {
			continue
		}
		if !strings.HasPrefix(g, "{") {
			return 0, 0, fmt.Errorf("replica_groups %q: expected a group {...}", v)
		}
		n := 0
		for _, x := range strings.Split(g[1:], ",") {
			if x = strings.TrimSpace(x); x != "" {
				id, err := strconv.Atoi(x)
				if err != nil || id < 0 || id >= 1<<20 {
					return 0, 0, fmt.Errorf("replica_groups %q: bad replica id %q (want 0..2^20-1)", v, x)
				}
				devices = max(devices, id+1)
				n++
			}
		}
		if size >= 0 && n != size {
			return 0, 0, fmt.Errorf("replica_groups %q: groups of different sizes (%d and %d)", v, size, n)
		}
		size = n
	}
	return max(size, 0), devices, nil
}

// ModuleChips is the number of chips a module runs on from its header:
// replica_count × num_partitions (each 1 when absent).
func ModuleChips(m *hlo.Module) int {
	n := 1
	for _, a := range m.Attrs {
		if a.Key == "replica_count" || a.Key == "num_partitions" {
			if v, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil && v > 0 {
				n *= v
			}
		}
	}
	return n
}
