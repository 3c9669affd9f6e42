package tpusim

import (
	"fmt"

	"github.com/tpucost/tpucost/compiler"
)

// CollectiveCost is the simulated cost of one collective on a group of chips.
type CollectiveCost struct {
	Ns           float64 `json:"ns"`
	BytesPerLink float64 `json:"bytes_per_link"` // bytes each link of the ring carries
	Hops         int     `json:"hops"`           // sequential link traversals (latency terms)
	GroupSize    int     `json:"group_size"`
}

// CollectiveGroup is the number of chips collective c runs over. Replica groups named in
// the instruction define it; chips (Options.Chips, `--chips`), else programChips (the
// module header's replica_count × num_partitions), sizes only a collective that names no
// group (replica_groups={}, as PyTorch/XLA writes them), and groups naming more devices
// than chips asks for are an error, never a silently different ring. Failing both, a
// collective-permute runs over the devices its source_target_pairs name. unsized reports a
// collective whose group size nothing gives (no group, no chips, a header of one chip):
// it is timed as a one-chip no-op, and callers count and report it.
func CollectiveGroup(c *compiler.Collective, chips, programChips int) (k int, unsized bool, err error) {
	if c.GroupSize > 0 {
		if chips > 0 && max(c.Devices, c.GroupSize) > chips {
			return 0, false, fmt.Errorf("replica groups span %d chips, more than the %d chips asked for (--chips): "+
				"the groups written in the instruction define the group; --chips sizes only collectives without groups",
				max(c.Devices, c.GroupSize), chips)
		}
		return c.GroupSize, false, nil
	}
	if chips > 0 {
		return chips, false, nil
	}
	if programChips > 1 {
		return programChips, false, nil
	}
	if c.Devices > 1 {
		// A collective-permute's source_target_pairs name its devices.
		return c.Devices, false, nil
	}
	return 1, true, nil
}

// CollectiveTime times a collective of the given kind ("all-reduce", "all-gather",
// "reduce-scatter", "all-to-all", "collective-permute") over a group of k chips of chip c.
// bytes is what the ring fractions apply to: the operand of all-reduce, reduce-scatter,
// all-to-all and collective-permute, the gathered result of all-gather.
//
// Model: the k chips form one unidirectional ring over one ICI link per chip (the
// torus's other links are left idle: a pessimistic limit). All-reduce is reduce-scatter
// then all-gather: 2(k-1)/k of the data crosses every link in 2(k-1) steps; all-gather
// and reduce-scatter move (k-1)/k in k-1 steps; all-to-all sends each chip's (k-1)/k
// share to the others at once, routed without contention (an optimistic limit), in
// ceil(k/2) hops; collective-permute sends the whole buffer one hop. Time is the
// per-link bytes at the link bandwidth, plus the per-hop latency per step, plus a kernel
// launch. A group of one chip costs nothing.
func CollectiveTime(kind string, bytes float64, k int, c Chip) (CollectiveCost, error) {
	if k <= 0 {
		return CollectiveCost{}, fmt.Errorf("%s: group of %d chips", kind, k)
	}
	if bytes < 0 {
		return CollectiveCost{}, fmt.Errorf("%s: negative size %g", kind, bytes)
	}
	cc := CollectiveCost{GroupSize: k}
	if k == 1 {
		return cc, nil
	}
	if c.ICILinkBandwidth <= 0 {
		return CollectiveCost{}, fmt.Errorf("chip %s has no interconnect model", c.Name)
	}
	f := float64(k-1) / float64(k)
	switch kind {
	case compiler.CollAllReduce:
		cc.BytesPerLink, cc.Hops = 2*f*bytes, 2*(k-1)
	case compiler.CollAllGather, compiler.CollReduceScatter:
		cc.BytesPerLink, cc.Hops = f*bytes, k-1
	case compiler.CollAllToAll:
		cc.BytesPerLink, cc.Hops = f*bytes, (k+1)/2
	case compiler.CollCollectivePermute:
		cc.BytesPerLink, cc.Hops = bytes, 1
	default:
		return CollectiveCost{}, fmt.Errorf("unknown collective %q", kind)
	}
	cc.Ns = cc.BytesPerLink/c.ICILinkBandwidth*1e9 + float64(cc.Hops)*c.ICIHopNs + c.LaunchNs
	return cc, nil
}

// collectiveSpan walks the schedule b and returns the most devices any collective's replica
// groups name and how many collectives (each instruction once) are unsized (see
// CollectiveGroup) under chips and programChips.
func collectiveSpan(b *compiler.Block, chips, programChips int) (devices, unsized int) {
	if b == nil {
		return 0, 0
	}
	add := func(d, u int) {
		devices, unsized = max(devices, d), unsized+u
	}
	for _, st := range b.Steps {
		switch {
		case st.Loop != nil:
			add(collectiveSpan(st.Loop.Cond, chips, programChips))
			add(collectiveSpan(st.Loop.Body, chips, programChips))
		case st.Cond != nil:
			for _, br := range st.Cond.Branches {
				add(collectiveSpan(br, chips, programChips))
			}
		case st.Collective != nil:
			c := st.Collective
			u := 0
			if _, uns, err := CollectiveGroup(c, chips, programChips); err == nil && uns {
				u = 1
			}
			add(max(c.Devices, c.GroupSize), u)
		}
	}
	return devices, unsized
}
