package compiler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// StagingMode selects what the staging pass does by default (Options.Staging).
type StagingMode int

// The staging modes.
const (
	// StagingOff stages nothing by default: today's programs, byte for byte (the
	// default). A config with staging entries (a tuned config) still has them applied,
	// over candidate edges whose default is not to stage, so that it reproduces its
	// program; without any, the pass does nothing and lists no edges.
	StagingOff StagingMode = iota
	// StagingOn stages every candidate edge that fits VMEM, in program order.
	StagingOn
	// StagingAuto stages the candidate edges that fit VMEM and that the analytical model
	// says make the producer or the consumer faster (an edge into a compute-bound
	// consumer whose producer has other users saves nothing the model sees, and keeps
	// its VMEM for edges that do).
	StagingAuto
)

var stagingModeNames = [...]string{"off", "on", "auto"}

// String is the mode's flag value: "off", "on" or "auto".
func (m StagingMode) String() string {
	if m < 0 || int(m) >= len(stagingModeNames) {
		return fmt.Sprintf("StagingMode(%d)", int(m))
	}
	return stagingModeNames[m]
}

// StagingModes lists the flag values of the modes.
func StagingModes() []string { return stagingModeNames[:] }

// ParseStagingMode parses a --staging value: off, on or auto.
func ParseStagingMode(s string) (StagingMode, error) {
	if i := slices.Index(stagingModeNames[:], s); i >= 0 {
		return StagingMode(i), nil
	}
	return 0, fmt.Errorf("staging mode %q: want one of %s", s, strings.Join(stagingModeNames[:], ", "))
}

// StagingChoice is one candidate staging edge: the consumer kernel reads the producer
// kernel's output (as fusion parameters Params) from VMEM rather than from HBM.
type StagingChoice struct {
	Name, Key          string
	Producer, Consumer string  // the kernels' names (fusion instructions)
	Params             []int   // the consumer's fusion parameters that read the producer
	Bytes              float64 // the staged array's padded size (its VMEM)
	Default            bool
	Chosen             bool
	// Refused says why a wanted edge was not staged (it does not fit VMEM); "" otherwise.
	Refused string
}

// StagingKey is the structural key of a staging edge: both kernels' keys and the
// consumer's parameters that read the producer.
func StagingKey(producerKey, consumerKey string, params []int) string {
	h := newHasher()
	h.str("staging")
	h.str(producerKey)
	h.str(consumerKey)
	h.ints(params)
	return h.sum()
}

// stagedArray is one producer's output staged for some of its consumers, while the pass
// decides.
type stagedArray struct {
	producer int // kernel index within the computation's list
	bytes    float64
	end      int          // the last staged consumer's index
	readers  map[int]bool // the staged consumers
}

// runStaging is the staging pass (after the Inferentia memory-staging work): it keeps a
// producer kernel's output resident in VMEM for its consumer kernels, so that they read it
// from there instead of making a round trip through HBM.
//
// Candidates: an edge producer -> consumer between two kernels of the same flow
// computation, with no loop, conditional or collective between them (the array would
// stay live across their kernels), whose producer output is an array the producer writes
// in boxes of whole memory tiles (cost.KernelInfo.StageableOutput) and the consumer
// reads in such boxes (StageableInput, the access-footprint check) at their chosen tiles,
// and, on a megacore device, whose cores compute the same rows of the array in both
// kernels (sameCores).
// Each candidate's decision is the config's entry for its edge name, else the store's
// for its key (StagingKey), else the mode's default (StagingOn: stage; StagingAuto: stage
// when the analytical model says the consumer or, for a producer with this one user, the
// producer gets faster; StagingOff: do not stage). Under StagingOff with no staging entry
// in the config the pass does nothing.
//
// VMEM: a staged array occupies VMEM from its producer to its last staged consumer, so
// every kernel of that span must fit its own buffers (its tile with its flags, its own
// staged arrays) plus every other staged array live across it. Wanted edges are taken in
// program order and one that would overflow some kernel is refused (the edge goes through
// HBM; a config entry asking for it is an error under Strict). The producer skips its HBM
// write only when every user of its output is a staged consumer (else it writes the array
// and also keeps it in VMEM). The staged choices are recorded on the fusion instructions
// as vmem_staged_operands={...} and vmem_staged_output=true.
func runStaging(m *hlo.Module, s *State) (bool, error) {
	if s.Options.Staging == StagingOff && len(s.Config.Staging) == 0 {
		return false, nil
	}
	byFusion := make(map[*hlo.Instruction]*KernelSite, len(s.Kernels))
	for _, site := range s.Kernels {
		byFusion[site.Fusion] = site
	}
	changed := false
	for _, c := range s.Flow {
		ch, err := s.stageComputation(c, byFusion)
		if err != nil {
			return false, err
		}
		changed = changed || ch
	}
	return changed, nil
}

// stageComputation runs the staging pass on one flow computation.
func (s *State) stageComputation(c *hlo.Computation, byFusion map[*hlo.Instruction]*KernelSite) (bool, error) {
	var sites []*KernelSite
	pos := map[*hlo.Instruction]int{} // kernel -> index in sites
	barrier := []int{}                // kernel indices before which a barrier stands
	users := map[*hlo.Instruction]int{}
	for _, in := range c.Instructions {
		for _, op := range in.Operands {
			users[op]++
		}
		if in.Opcode == hlo.OpFusion {
			if site := byFusion[in]; site != nil {
				pos[in] = len(sites)
				sites = append(sites, site)
			}
			continue
		}
		if _, coll := collectiveKind(in); coll || in.Opcode == hlo.OpWhile || in.Opcode == hlo.OpConditional {
			barrier = append(barrier, len(sites))
		}
	}
	if c.Root != nil {
		users[c.Root]++ // the computation's result escapes it
	}
	crosses := func(from, to int) bool { // a barrier between kernels from and to
		for _, b := range barrier {
			if b > from && b <= to {
				return true
			}
		}
		return false
	}
	t := s.Options.Target
	vmem := float64(t.VMEMBytes)
	arrays := map[int]*stagedArray{} // by producer index
	ins := make([][]int, len(sites)) // staged parameters per consumer
	outs := make([]bool, len(sites)) // staged output per producer
	choices := make([]cost.Planned, len(sites))
	for i, site := range sites {
		choices[i] = site.Choice
	}
	// need is what kernel j needs in VMEM with choice p: its footprint plus every staged
	// array live across it that is not one of its own (p counts those: its staged inputs,
	// and its output when p stages it).
	need := func(j int, p cost.Planned, arrs map[int]*stagedArray) float64 {
		n := p.Footprint()
		for pi, a := range arrs {
			if j < a.producer || j > a.end || (pi == j && p.Config.Staging.Out) || a.readers[j] {
				continue
			}
			n += a.bytes
		}
		return n
	}
	changed := false
	for ci, cons := range sites {
		seen := map[int]bool{}
		for _, op := range cons.Fusion.Operands {
			pi, ok := pos[op]
			if !ok || seen[pi] || pi >= ci {
				continue
			}
			seen[pi] = true
			prod := sites[pi]
			var params []int
			for i, o := range cons.Fusion.Operands {
				if o == op {
					params = append(params, i)
				}
			}
			if crosses(pi, ci) || prod.Info.StageableOutput(prod.Choice.Config.Tile, t) != nil {
				continue
			}
			ok = true
			for _, p := range params {
				if cons.Info.StageableInput(p, cons.Choice.Config.Tile, t) != nil {
					ok = false
				}
			}
			if !ok || !sameCores(prod, cons, params, t) {
				continue
			}
			name := s.qualName(c, prod.Fusion.Name+"->"+cons.Fusion.Name)
			key := StagingKey(prod.Key, cons.Key, params)
			sc := StagingChoice{Name: name, Key: key, Producer: prod.Fusion.Name, Consumer: cons.Fusion.Name,
				Params: params, Bytes: prod.Info.Output.Padded}
			sc.Default = s.Options.Staging == StagingOn || (s.Options.Staging == StagingAuto && stagingGains(prod, cons, params, users[op] == 1))
			want, fromConfig := sc.Default, false
			if e, fc, ok := s.want(KindStaging, name, key); ok {
				want, fromConfig = e.Staging, fc
			}
			if want {
				if err := s.tryStage(pi, ci, params, users[op], sc.Bytes, sites, choices, ins, outs, arrays, need, vmem); err != nil {
					if fromConfig && s.Options.Strict {
						return false, fmt.Errorf("staging %s: %w", name, err)
					}
					sc.Refused = err.Error()
					want = false
				}
			}
			sc.Chosen = want
			if want != sc.Default {
				changed = true
			}
			s.Space.Staging = append(s.Space.Staging, sc)
			s.Effective.Staging[name] = want
		}
	}
	for i, site := range sites {
		site.Choice = choices[i]
		st := site.Choice.Config.Staging
		if len(st.In) > 0 {
			setExtra(site.Fusion, "vmem_staged_operands", tileAttr(cost.Tile(st.In)))
		}
		if st.Out {
			setExtra(site.Fusion, "vmem_staged_output", "true")
		}
	}
	return changed, nil
}

// tryStage stages the producer pi's output for consumer ci (its parameters params) when
// every kernel from the producer to the array's last consumer still fits VMEM, updating
// choices, ins, outs and arrays; otherwise it changes nothing and says why.
func (s *State) tryStage(pi, ci int, params []int, nUsers int, bytes float64, sites []*KernelSite, choices []cost.Planned,
	ins [][]int, outs []bool, arrays map[int]*stagedArray, need func(int, cost.Planned, map[int]*stagedArray) float64, vmem float64) error {
	// The tentative state: the array, the consumer's and maybe the producer's choice.
	a := arrays[pi]
	na := &stagedArray{producer: pi, bytes: bytes, end: ci, readers: map[int]bool{ci: true}}
	if a != nil {
		na.end = max(a.end, ci)
		for r := range a.readers {
			na.readers[r] = true
		}
	}
	tentative := make(map[int]*stagedArray, len(arrays)+1)
	for k, v := range arrays {
		tentative[k] = v
	}
	tentative[pi] = na
	newIns := slices.Concat(ins[ci], params)
	cons, err := stageChoice(sites[ci], newIns, outs[ci])
	if err != nil {
		return err
	}
	newOut := len(na.readers) == nUsers // every user reads it from VMEM: no HBM write
	prod := choices[pi]
	if newOut != outs[pi] {
		if prod, err = stageChoice(sites[pi], ins[pi], newOut); err != nil {
			return err
		}
	}
	for j := pi; j <= na.end; j++ {
		p := choices[j]
		switch j {
		case ci:
			p = cons
		case pi:
			p = prod
		}
		if n := need(j, p, tentative); n > vmem {
			return fmt.Errorf("%w: kernel %s would need %.2f MiB of VMEM with the staged array (%.2f MiB) live, %s has %.2f MiB",
				cost.ErrTileInvalid, sites[j].Fusion.Name, n/(1<<20), bytes/(1<<20), s.Options.Target.Name, vmem/(1<<20))
		}
	}
	outs[pi] = newOut // commit
	arrays[pi] = na
	ins[ci] = newIns
	choices[ci], choices[pi] = cons, prod
	return nil
}

// stageChoice is a kernel's choice (its planned tile and flags) with staging in and out.
func stageChoice(site *KernelSite, in []int, out bool) (cost.Planned, error) {
	return site.Choice.Staged(cost.Staging{In: in, Out: out})
}

// stagingGains reports whether staging the edge makes the consumer (reading params from
// VMEM) or, when it is the producer's only user, the producer (no HBM write) faster by
// the analytical model: StagingAuto's default.
func stagingGains(prod, cons *KernelSite, params []int, onlyUser bool) bool {
	const minGain = 1e-9 // relative; below this the model sees no difference
	if c, err := cons.Choice.Staged(cost.Staging{In: params}); err == nil && c.Analytical() < cons.Choice.Analytical()*(1-minGain) {
		return true
	}
	if !onlyUser {
		return false
	}
	p, err := prod.Choice.Staged(cost.Staging{Out: true})
	return err == nil && p.Analytical() < prod.Choice.Analytical()*(1-minGain)
}

// sameCores reports whether, on a device of several cores (megacore: separate VMEMs),
// the consumer's cores find the rows of the staged array they read in their own VMEM:
// both kernels run on one core, or both run on all of them and give each core the same
// whole rows of the array (cost.KernelInfo.CoreRows). Always true on a one-core device.
func sameCores(prod, cons *KernelSite, params []int, t cost.Target) bool {
	if t.DeviceCores() == 1 {
		return true
	}
	pc := t.ParallelCores(prod.Info.ParallelUnits(prod.Choice.Plan))
	cc := t.ParallelCores(cons.Info.ParallelUnits(cons.Choice.Plan))
	if pc == 1 && cc == 1 {
		return true
	}
	if pc != cc {
		return false
	}
	n := t.DeviceCores()
	rows, ok := prod.Info.CoreRows(-1, prod.Choice.Config.Tile, n)
	if !ok {
		return false
	}
	for _, p := range params {
		if r, ok := cons.Info.CoreRows(p, cons.Choice.Config.Tile, n); !ok || r != rows {
			return false
		}
	}
	return true
}
