package cost

import (
	"fmt"
	"slices"

	"github.com/tpucost/tpucost/internal/stablehash"
)

// Planned is one kernel choice, planned: the kernel's analysis (Info) and structural key
// (Key, compiler.KernelKey), its configuration (tile and flags), the target it is planned
// for and the plan the tile implies there. It is valid by construction: the flags are
// supported, the tile fits the kernel and, with the flags, the target's VMEM.
//
// A choice is planned once, by this package, where it is made — Options (the tile
// options of a kernel, which the compiler keeps per kernel key in compiler.KernelCache),
// WithFlags (the same tile with other flags, from its plan) or PlanConfig (any config) —
// and the value is passed on: a compiled compiler.Kernel carries its Choice, and the
// simulator (tpusim.Simulate), the analytical model (Analytical), the features
// (features.Config), the learned model's predictor, the tuner and the dataset generator
// all take a Planned and never plan again. ID names it in every cache and store.
type Planned struct {
	Info   *KernelInfo
	Key    string
	Config KernelConfig
	Target Target
	Plan   Plan
}

// PlanConfig plans config c of the kernel analyzed as info (whose structural key is key)
// on target t. Errors wrap ErrTileInvalid: invalid flags, a tile that does not fit the
// kernel, or one that does not fit VMEM with the flags.
func PlanConfig(info *KernelInfo, key string, c KernelConfig, t Target) (Planned, error) {
	if err := c.Flags.Validate(); err != nil {
		return Planned{}, fmt.Errorf("%w: %v", ErrTileInvalid, err)
	}
	if !c.Staging.Empty() {
		if err := info.validTile(c.Tile); err != nil {
			return Planned{}, err
		}
		// The unstaged plan need not fit with the flags: the staged one is checked.
		p := Planned{Info: info, Key: key, Config: KernelConfig{Tile: slices.Clone(c.Tile), Flags: c.Flags}, Target: t}
		return p.Staged(c.Staging)
	}
	plan, err := info.CheckTile(c.Tile, c.Flags, t)
	if err != nil {
		return Planned{}, err
	}
	return Planned{Info: info, Key: key, Config: KernelConfig{Tile: slices.Clone(c.Tile), Flags: c.Flags}, Target: t, Plan: plan}, nil
}

// WithFlags is the same tile with flags f, from the same plan (a plan does not depend on
// the flags). It fails, wrapping ErrTileInvalid, for invalid flags or when the tile's
// buffers do not fit VMEM with them.
func (p Planned) WithFlags(f Flags) (Planned, error) {
	if f == p.Config.Flags {
		return p, nil
	}
	if err := f.Validate(); err != nil {
		return Planned{}, fmt.Errorf("%w: %v", ErrTileInvalid, err)
	}
	if err := fits(p.Config.Tile, p.Plan, f, p.Target); err != nil {
		return Planned{}, err
	}
	p.Config.Flags = f
	return p, nil
}

// For is the same choice planned for target t: p itself when it was planned for t, and
// p's plan retargeted when t differs only in what no plan reads (its name, launch and
// step overheads: a calibrated preset's timing constants).
func (p Planned) For(t Target) (Planned, error) {
	if p.Target == t {
		return p, nil
	}
	u := t
	u.Name, u.LaunchNs, u.StepOverheadCycles = p.Target.Name, p.Target.LaunchNs, p.Target.StepOverheadCycles
	if u == p.Target {
		p.Target = t
		return p, nil
	}
	return PlanConfig(p.Info, p.Key, p.Config, t)
}

// FlagOptions lists the flag combinations valid with the choice's tile (those whose
// buffers fit VMEM), in AllFlags order: the default first when valid.
func (p Planned) FlagOptions() []Flags {
	out := make([]Flags, 0, len(allFlags))
	for _, f := range allFlags {
		if p.Plan.Footprint(f) <= float64(p.Target.VMEMBytes) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Footprint is the VMEM the choice needs (its plan's footprint with its flags).
func (p Planned) Footprint() float64 { return p.Plan.Footprint(p.Config.Flags) }

// ID is the choice's one identity: KernelConfig.ID of its key, "<key>|tile=...;flags=...".
// Every cache and store of kernel choices keys on it (the tuner's measured and predicted
// times, its measurement salts); Hash is its stable hash.
func (p Planned) ID() string { return p.Config.ID(p.Key) }

// Hash writes the identity's fields (the kernel key, the tile and the flags, each
// length-prefixed: stablehash.Hash.Strs) to h and returns h: the simulator's measurement
// noise and the tuner's program fingerprints hash a choice this way.
func (p Planned) Hash(h *stablehash.Hash) *stablehash.Hash {
	h.Str(p.Key).Str(p.Config.Tile.String()).Str(p.Config.Flags.String())
	if !p.Config.Staging.Empty() { // unstaged choices hash as they did before staging existed
		h.Str(p.Config.Staging.String())
	}
	return h
}
