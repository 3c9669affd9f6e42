package tpusim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
)

// Constants are the timing constants of a preset that no public figure gives: what
// `tpucost calibrate` fits to real measurements. The public figures (peak FLOP/s, clock,
// HBM bandwidth, VMEM size, MXU and core counts) are never fitted.
type Constants struct {
	LaunchNs           float64 `json:"launch_ns"`
	StepOverheadCycles float64 `json:"step_overhead_cycles"`
	DMALatencyNs       float64 `json:"dma_latency_ns"`
	BurstNs            float64 `json:"burst_ns"`
	SyncCycles         float64 `json:"sync_cycles"`
	VALUSlots          float64 `json:"valu_slots"`
	EUPCyclesPerVreg   float64 `json:"eup_cycles_per_vreg"`
	XLUCyclesPerVreg   float64 `json:"xlu_cycles_per_vreg"`
	MXUFillCycles      float64 `json:"mxu_fill_cycles"`
	WeightLoadCycles   float64 `json:"weight_load_cycles"`
	CodeLoadNsPerOp    float64 `json:"code_load_ns_per_op"`
}

// ConstantBound is the physically plausible range of one constant.
type ConstantBound struct {
	Name   string
	Lo, Hi float64
	Why    string
}

// ConstantBounds lists every constant of Constants with the range a fit or a chip file
// may give it, in the order of Constants.Vector.
func ConstantBounds() []ConstantBound {
	return []ConstantBound{
		{"launch_ns", 100, 10000, "a kernel launch: scalar-core dispatch, from a few hundred ns to a few µs"},
		{"step_overhead_cycles", 0, 2000, "one grid step's loop control and DMA bookkeeping"},
		{"dma_latency_ns", 50, 5000, "issue to first byte of an HBM DMA"},
		{"burst_ns", 0, 100, "extra cost of each separate DMA burst"},
		{"sync_cycles", 0, 1000, "buffer hand-off per step when double buffering"},
		{"valu_slots", 0.5, 8, "vector-register operations per cycle"},
		{"eup_cycles_per_vreg", 0.5, 64, "transcendental unit cycles per vector register"},
		{"xlu_cycles_per_vreg", 0.25, 64, "transpose/reduce unit cycles per vector register"},
		{"mxu_fill_cycles", 0, 1024, "systolic fill and drain per step (the array is 128 deep)"},
		{"weight_load_cycles", 8, 1024, "loading one [128,128] weight block into an MXU"},
		{"code_load_ns_per_op", 0, 100, "loading one op's code at launch"},
	}
}

// Vector lists the constants in ConstantBounds' order.
func (k Constants) Vector() []float64 {
	return []float64{k.LaunchNs, k.StepOverheadCycles, k.DMALatencyNs, k.BurstNs, k.SyncCycles, k.VALUSlots,
		k.EUPCyclesPerVreg, k.XLUCyclesPerVreg, k.MXUFillCycles, k.WeightLoadCycles, k.CodeLoadNsPerOp}
}

// ConstantsFromVector is Vector's inverse.
func ConstantsFromVector(v []float64) Constants {
	return Constants{LaunchNs: v[0], StepOverheadCycles: v[1], DMALatencyNs: v[2], BurstNs: v[3], SyncCycles: v[4], VALUSlots: v[5],
		EUPCyclesPerVreg: v[6], XLUCyclesPerVreg: v[7], MXUFillCycles: v[8], WeightLoadCycles: v[9], CodeLoadNsPerOp: v[10]}
}

// Check reports the first constant outside its bound (or not finite), by its name.
func (k Constants) Check() error {
	for i, v := range k.Vector() {
		b := ConstantBounds()[i]
		if math.IsNaN(v) || v < b.Lo || v > b.Hi {
			return fmt.Errorf("field constants.%s: %g is outside [%g, %g] (%s)", b.Name, v, b.Lo, b.Hi, b.Why)
		}
	}
	return nil
}

// Constants returns c's fitted constants.
func (c Chip) Constants() Constants {
	return Constants{LaunchNs: c.LaunchNs, StepOverheadCycles: c.StepOverheadCycles, DMALatencyNs: c.DMALatencyNs, BurstNs: c.BurstNs,
		SyncCycles: c.SyncCycles, VALUSlots: c.VALUSlots, EUPCyclesPerVreg: c.EUPCyclesPerVreg, XLUCyclesPerVreg: c.XLUCyclesPerVreg,
		MXUFillCycles: c.MXUFillCycles, WeightLoadCycles: c.WeightLoadCycles, CodeLoadNsPerOp: c.CodeLoadNsPerOp}
}

// WithConstants returns c with its constants replaced by k (name and everything public
// unchanged).
func (c Chip) WithConstants(k Constants) Chip {
	c.LaunchNs, c.StepOverheadCycles, c.DMALatencyNs, c.BurstNs = k.LaunchNs, k.StepOverheadCycles, k.DMALatencyNs, k.BurstNs
	c.SyncCycles, c.VALUSlots, c.EUPCyclesPerVreg, c.XLUCyclesPerVreg = k.SyncCycles, k.VALUSlots, k.EUPCyclesPerVreg, k.XLUCyclesPerVreg
	c.MXUFillCycles, c.WeightLoadCycles, c.CodeLoadNsPerOp = k.MXUFillCycles, k.WeightLoadCycles, k.CodeLoadNsPerOp
	return c
}

// ChipFile is a preset stored as JSON: a built-in preset (Base) with its non-public
// constants replaced, as `tpucost calibrate` writes it and `--chip-file` reads it.
type ChipFile struct {
	// Name names the preset (letters, digits, '-', '_', '.'); the loaded chip is named
	// Name@HASH, HASH the first 12 hex digits of the SHA-256 of the base and constants,
	// so that datasets and models record which constants produced them.
	Name      string    `json:"name"`
	Base      string    `json:"base"`
	Constants Constants `json:"constants"`
	// Calibration records how the constants were fitted (informational).
	Calibration *CalibrationInfo `json:"calibration,omitempty"`
}

// CalibrationInfo is how a chip file's constants were fitted.
type CalibrationInfo struct {
	Files          []string `json:"files"`
	Seed           int64    `json:"seed"`
	FitKernels     []string `json:"fit_kernels"`
	HeldoutKernels []string `json:"heldout_kernels"`
	Simulator      string   `json:"simulator"`
}

// Hash is the identity of f's timing: its base preset and constants.
func (f ChipFile) Hash() string {
	b, _ := json.Marshal(struct {
		Base      string    `json:"base"`
		Constants Constants `json:"constants"`
	}{strings.ToLower(f.Base), f.Constants})
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:12]
}

// Chip builds the preset f describes.
func (f ChipFile) Chip() (Chip, error) {
	if f.Name == "" || strings.IndexFunc(f.Name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) >= 0 {
		return Chip{}, fmt.Errorf("field name: %q is not a preset name (letters, digits, '-', '_', '.')", f.Name)
	}
	base, err := Preset(f.Base)
	if err != nil {
		return Chip{}, fmt.Errorf("field base: %w", err)
	}
	if err := f.Constants.Check(); err != nil {
		return Chip{}, err
	}
	c := base.WithConstants(f.Constants)
	c.Name = f.Name + "@" + f.Hash()
	return c, c.Validate()
}

// LoadChipFile is LoadChipFileContext under context.Background().
func LoadChipFile(path string) (Chip, error) { return LoadChipFileContext(context.Background(), path) }

// LoadChipFileContext reads a chip file, at most inputfile.Max(ctx, inputfile.ChipJSON)
// bytes (1 MiB unless ctx carries --max-input-bytes); a read still waiting when ctx is
// cancelled (a FIFO) stops. Malformed JSON, an unknown field, a missing constant or one
// out of its bound is one error naming the file and the field.
func LoadChipFileContext(ctx context.Context, path string) (Chip, error) {
	data, err := inputfile.ReadFile(ctx, path, inputfile.ChipJSON)
	if err != nil {
		return Chip{}, fmt.Errorf("chip file: %w", err)
	}
	var raw struct {
		ChipFile
		Constants map[string]json.RawMessage `json:"constants"`
	}
	if err := jsonerr.UnmarshalStrict(path, data, &raw); err != nil {
		return Chip{}, err
	}
	for _, b := range ConstantBounds() {
		if _, ok := raw.Constants[b.Name]; !ok {
			return Chip{}, fmt.Errorf("%s: field constants.%s is missing", path, b.Name)
		}
	}
	var f ChipFile
	if err := jsonerr.UnmarshalStrict(path, data, &f); err != nil {
		return Chip{}, err
	}
	c, err := f.Chip()
	if err != nil {
		return Chip{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// WriteChipFile writes f to path atomically, after checking that it loads.
func WriteChipFile(path string, f ChipFile) error {
	if _, err := f.Chip(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'))
}
