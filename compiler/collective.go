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
// 16 for {{0,...,7},{8,...,15}}, 4 for a collective-permute's source_target_pairs
// {{0,1},{1,2},{2,3}} (which leave GroupSize 0); 0 when no group or pair is named.
type Collective struct {
	Name      string
	Kind      string
	Bytes     float64
	GroupSize int
	Devices   int
	// Line, Col are the instruction's position in its module's file (hlo.Instruction), for
	// errors found when it is timed (hlo.AtPos; 0 when not parsed).
	Line, Col int `json:"-"`
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
	c := &Collective{Name: in.Name, Kind: kind, Line: in.Line, Col: in.Col}
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
		groups := ReplicaGroups
		if kind == CollAllReduce {
			// XLA allows all-reduce groups of different sizes (its verifier's
			// uniform_replica_group_size is false for all-reduce only).
			groups = replicaGroupsLargest
		}
		k, n, err := groups(v)
		if err != nil {
			return nil, hlo.At(in, fmt.Errorf("%s: %w", in.Name, err))
		}
		c.GroupSize, c.Devices = k, n
	}
	if v, ok := in.ExtraAttr("source_target_pairs"); ok && kind == CollCollectivePermute {
		// The pairs name the devices the permute runs over (largest id + 1); it has no
		// group size, so GroupSize stays 0 and a size given by the header or --chips
		// wins (tpusim.CollectiveGroup).
		_, n, err := replicaGroupsLargest(v)
		if err != nil {
			return nil, hlo.At(in, fmt.Errorf("%s: source_target_pairs: %w", in.Name, err))
		}
		c.Devices = max(c.Devices, n)
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
// explicit groups, the product of the iota form's device dimensions ("[2,4]<=[8]": 8),
// the mesh's devices of the mesh form ("mesh['x'=4,'y'=2] {'x'}": groups of 4 over 8).
// Both are 0 for "{}".
func ReplicaGroups(v string) (size, devices int, err error) {
	return replicaGroups(v, true)
}

// replicaGroupsLargest is ReplicaGroups for an all-reduce, whose explicit groups may
// differ in size: the size is the largest group's. The groups run at once on disjoint
// chips, so the collective ends when the largest one (the longest ring) does.
func replicaGroupsLargest(v string) (size, devices int, err error) {
	return replicaGroups(v, false)
}

func replicaGroups(v string, uniform bool) (size, devices int, err error) {
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
	if strings.HasPrefix(v, "mesh[") {
		return meshGroups(v)
	}
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return 0, 0, fmt.Errorf("replica_groups %q: expected {{...},...}, [groups,size]<=[n] or mesh[...] {...}", v)
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
		if uniform && size >= 0 && n != size {
			return 0, 0, fmt.Errorf("replica_groups %q: groups of different sizes (%d and %d)", v, size, n)
		}
		size = max(size, n)
	}
	return max(size, 0), devices, nil
}

var (
	meshForm    = regexp.MustCompile(`^mesh\[([^\]]*)\](?:\s*,\s*device_ids=\(((?:[^()]|\([^()]*\))*)\))?\s*\{([^}]*)\}$`)
	meshIota    = regexp.MustCompile(`^\[([0-9,\s]+)\]\s*(?:T\(([0-9,\s]*)\))?$`)
	meshAxis    = regexp.MustCompile(`^'([^']+)'\s*=\s*([0-9]+)$`)
	meshAxisRef = regexp.MustCompile(`^'([^']+)'(?:\s*:\s*\(\s*[0-9]+\s*\)\s*([0-9]+))?$`)
)

// meshGroups reads XLA's mesh form of replica_groups, "mesh['x'=4,'y'=2] {'x'}": the
// devices are the mesh's (the product of its axis sizes) and a group spans the axes
// listed, each whole or a sub-axis 'x':(pre)size, so its size is the product of their
// sizes. An optional ", device_ids=(...)" after the mesh orders its devices, as XLA's
// parser reads it: a list of exactly the mesh's size of distinct ids, or an iota
// "[d1,d2,...]T(perm)" (T after two or more dimensions, none after one) whose dimensions multiply to the
// mesh's size and whose perm permutes them. The order does not change the counts.
func meshGroups(v string) (size, devices int, err error) {
	m := meshForm.FindStringSubmatch(v)
	if m == nil {
		return 0, 0, fmt.Errorf("replica_groups %q: expected mesh['axis'=size,...] {'axis',...}", v)
	}
	axes := map[string]int{}
	devices = 1
	for _, a := range strings.Split(m[1], ",") {
		am := meshAxis.FindStringSubmatch(strings.TrimSpace(a))
		if am == nil {
			return 0, 0, fmt.Errorf("replica_groups %q: mesh axis %q: expected 'name'=size", v, strings.TrimSpace(a))
		}
		n, err := strconv.Atoi(am[2])
		if err != nil || n <= 0 || n > 1<<20 {
			return 0, 0, fmt.Errorf("replica_groups %q: mesh axis %q: bad size", v, am[1])
		}
		if devices *= n; devices > 1<<20 {
			return 0, 0, fmt.Errorf("replica_groups %q: more than 2^20 devices", v)
		}
		axes[am[1]] = n
	}
	if ids := strings.TrimSpace(m[2]); m[2] != "" || strings.Contains(v, "device_ids=(") {
		if devices, err = meshDeviceIDs(v, ids, devices); err != nil {
			return 0, 0, err
		}
	}
	size = 1
	if refs := strings.TrimSpace(m[3]); refs != "" {
		for _, r := range strings.Split(refs, ",") {
			rm := meshAxisRef.FindStringSubmatch(strings.TrimSpace(r))
			if rm == nil {
				return 0, 0, fmt.Errorf("replica_groups %q: axis %q: expected 'name' or 'name':(pre)size", v, strings.TrimSpace(r))
			}
			n, ok := axes[rm[1]]
			if !ok {
				return 0, 0, fmt.Errorf("replica_groups %q: axis %q is not one of the mesh's", v, rm[1])
			}
			if rm[2] != "" {
				sub, err := strconv.Atoi(rm[2])
				if err != nil || sub <= 0 || n%sub != 0 {
					return 0, 0, fmt.Errorf("replica_groups %q: sub-axis %q of size %s does not divide %d", v, rm[1], rm[2], n)
				}
				n = sub
			}
			size *= n
		}
	}
	return size, devices, nil
}

// meshDeviceIDs checks a mesh's device_ids=(ids) against its n devices as XLA's parser
// does (ParseMesh) and returns the devices the mesh spans.
func meshDeviceIDs(v, ids string, n int) (int, error) {
	if im := meshIota.FindStringSubmatch(ids); im != nil {
		var dims []int
		prod := 1
		for _, d := range strings.Split(im[1], ",") {
			x, err := strconv.Atoi(strings.TrimSpace(d))
			if err != nil || x <= 0 || x > 1<<20 {
				return 0, fmt.Errorf("replica_groups %q: device_ids dimension %q: expected a positive size", v, strings.TrimSpace(d))
			}
			dims = append(dims, x)
			if prod *= x; prod > 1<<20 {
				return 0, fmt.Errorf("replica_groups %q: more than 2^20 devices", v)
			}
		}
		if prod != n {
			return 0, fmt.Errorf("replica_groups %q: device_ids iota of %d devices for a mesh of %d", v, prod, n)
		}
		if (len(dims) > 1) != strings.Contains(ids, "T(") {
			return 0, fmt.Errorf("replica_groups %q: device_ids iota %s: expected T(perm) after two or more dimensions, none after one", v, ids)
		}
		if im[2] != "" || strings.Contains(ids, "T(") {
			seen := make([]bool, len(dims))
			perm := strings.Split(im[2], ",")
			for _, q := range perm {
				k, err := strconv.Atoi(strings.TrimSpace(q))
				if err != nil || k < 0 || k >= len(dims) || seen[k] {
					return 0, fmt.Errorf("replica_groups %q: device_ids transpose T(%s): expected a permutation of 0..%d", v, im[2], len(dims)-1)
				}
				seen[k] = true
			}
			if len(perm) != len(dims) {
				return 0, fmt.Errorf("replica_groups %q: device_ids transpose T(%s): expected a permutation of 0..%d", v, im[2], len(dims)-1)
			}
		}
		return n, nil
	}
	count := 0
	seen := map[int]bool{}
	for _, x := range strings.Split(ids, ",") {
		id, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || id < 0 || id >= 1<<20 {
			return 0, fmt.Errorf("replica_groups %q: device id %q: expected 0..2^20-1", v, strings.TrimSpace(x))
		}
		if seen[id] {
			return 0, fmt.Errorf("replica_groups %q: device id %d listed twice", v, id)
		}
		seen[id] = true
		count++
	}
	if count != n {
		// XLA: "Expected %d device_ids based on mesh axes, but got %d".
		return 0, fmt.Errorf("replica_groups %q: expected %d device_ids (the mesh's size), found %d", v, n, count)
	}
	return n, nil
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
