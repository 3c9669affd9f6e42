package tpugraphs

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/internal/pbwire"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Field numbers of tpu_graphs/proto/tuning.proto (tpu_graphs repository) and of
// xla.ExecutionProfile (XLA's xla_data.proto), the messages the raw tuning data is made of.
const (
	// TuningData
	fTuningModules = 1 // repeated ModuleTuningData
	// ModuleTuningData
	fMTDModule            = 1 // xla.HloModuleProto
	fMTDFingerprint       = 2 // uint64
	fMTDRuns              = 3 // repeated ConfigProfile
	fMTDConfigIndexToNode = 4 // repeated uint64 (packed)
	// ConfigProfile
	fRunOpConfig     = 1 // HloOpConfig (oneof config)
	fRunModuleConfig = 2 // HloModuleConfig (oneof config)
	fRunError        = 3 // bool
	fRunProfile      = 4 // xla.ExecutionProfile
	fRunIsDefault    = 5 // bool
	// HloOpConfig
	fOpTileSizeConfig = 1 // TileSizeConfig
	// TileSizeConfig: repeated int64 each
	fTileKernelBounds    = 1
	fTileOutputBounds    = 2
	fTileInputBounds     = 3
	fTileIterationBounds = 4
	// HloModuleConfig
	fModLayoutConfig = 1 // LayoutConfig
	// LayoutConfig
	fLayoutNodes = 1 // repeated NodeLayoutConfig
	// NodeLayoutConfig
	fNodeTensors = 1 // repeated TensorLayoutConfig
	// TensorLayoutConfig
	fTensorDims = 1 // repeated int32
	// xla.ExecutionProfile
	fProfComputeCycleCount       = 3 // int64
	fProfComputeTimeNs           = 4 // int64
	fProfComputeAndTransferTimeN = 5 // int64
)

// ModuleTuning is one tpu_graphs.ModuleTuningData: an HLO module and the configurations
// measured on a TPU for it.
type ModuleTuning struct {
	Module      *hlo.Module
	Fingerprint uint64
	Runs        []Run
	// ConfigIndexToNode gives, for layout configs, the node the i-th entry of
	// LayoutConfig.Nodes configures: its position in Instructions (the module's
	// instructions, computations in proto order), as tpu_graphs' own featurizer numbers
	// nodes. It is not an HloInstructionProto.id.
	ConfigIndexToNode []uint64
	// Instructions lists the module's instructions in proto order (computations in
	// order, each computation's instructions in order) as their computation's name and
	// their own: the node numbering of config_index_to_node.
	Instructions [][2]string
}

// Run is one tpu_graphs.ConfigProfile: a configuration and its measurement. At most one
// of Tile and Layout is set.
type Run struct {
	Tile      *TileSizeConfig
	Layout    *LayoutConfig
	Error     bool // the configuration failed to compile or run
	IsDefault bool // the compiler's default configuration
	// Profile is the xla.ExecutionProfile; HasProfile is false when the run has none.
	HasProfile bool
	Profile    Profile
}

// Profile holds the measured fields of an xla.ExecutionProfile.
type Profile struct {
	ComputeCycleCount       int64
	ComputeTimeNs           int64
	ComputeAndTransferTimeN int64
}

// TileSizeConfig is tpu_graphs.TileSizeConfig.
type TileSizeConfig struct {
	KernelBounds, OutputBounds, InputBounds, IterationBounds []int64
}

// LayoutConfig is tpu_graphs.LayoutConfig: per configured node, per tensor, the
// minor-to-major dimension order.
type LayoutConfig struct {
	Nodes [][][]int32
}

// ReadTuningFile is ReadTuningFileContext under context.Background().
func ReadTuningFile(path string) ([]ModuleTuning, error) {
	return ReadTuningFileContext(context.Background(), path)
}

// ReadTuningFileContext reads a serialized tpu_graphs.TuningData or ModuleTuningData (see
// DecodeTuning) of at most inputfile.Max(ctx, inputfile.TuningProto) bytes (2 GiB unless
// ctx carries --max-input-bytes); a read still waiting when ctx is cancelled stops.
func ReadTuningFileContext(ctx context.Context, path string) ([]ModuleTuning, error) {
	data, err := inputfile.ReadFile(ctx, path, inputfile.TuningProto)
	if err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	return DecodeTuning(path, data)
}

// DecodeTuning decodes a serialized tpu_graphs.TuningData (a list of ModuleTuningData, as
// the op-level tile tuning files are) or a single ModuleTuningData (as the module-level
// layout tuning files are); name is used in errors. The modules decode with
// hlo.DecodeModuleProto and are checked like any imported HLO. Errors name the file and
// the module index.
func DecodeTuning(name string, data []byte) ([]ModuleTuning, error) {
	top, err := pbwire.Fields(data)
	if err != nil {
		return nil, pbwire.Invalid(name, "tpu_graphs TuningData or ModuleTuningData", data, err)
	}
	var msgs [][]byte
	if isTuningData(top) {
		for _, f := range top {
			msgs = append(msgs, f.B)
		}
	} else {
		msgs = [][]byte{data}
	}
	out := make([]ModuleTuning, 0, len(msgs))
	for i, b := range msgs {
		mt, err := decodeModuleTuning(name, b)
		if de := (*pbwire.DecodeError)(nil); errors.As(err, &de) {
			return nil, pbwire.Invalid(name, "tpu_graphs ModuleTuningData", data, err)
		}
		if err != nil {
			if len(msgs) > 1 {
				return nil, fmt.Errorf("module %d: %w", i, err)
			}
			return nil, err
		}
		out = append(out, mt)
	}
	return out, nil
}

// isTuningData tells a TuningData from a ModuleTuningData: a TuningData has only field 1
// (ModuleTuningData messages, whose own field 2 is the fingerprint, a varint), while a
// ModuleTuningData's field 1 is an HloModuleProto (whose field 2, the entry computation's
// name, is a string) and it has runs (field 3).
func isTuningData(top []pbwire.Field) bool {
	if len(top) == 0 {
		return false
	}
	for _, f := range top {
		if f.Num != fTuningModules || f.Type != protowire.BytesType {
			return false
		}
	}
	inner, err := pbwire.Fields(top[0].B)
	if err != nil {
		return false
	}
	for _, f := range inner {
		if f.Num == fMTDFingerprint {
			return f.Type == protowire.VarintType
		}
		if f.Num == fMTDRuns && f.Type == protowire.BytesType {
			return true
		}
	}
	return false
}

func decodeModuleTuning(name string, data []byte) (ModuleTuning, error) {
	var mt ModuleTuning
	fs, err := pbwire.Fields(data)
	if err != nil {
		return mt, fmt.Errorf("%s: bad ModuleTuningData: %w", name, err)
	}
	var module []byte
	for _, f := range fs {
		switch {
		case f.Num == fMTDModule && f.Type == protowire.BytesType:
			module = f.B
		case f.Num == fMTDFingerprint && f.Type == protowire.VarintType:
			mt.Fingerprint = f.V
		case f.Num == fMTDRuns && f.Type == protowire.BytesType:
			r, err := decodeRun(f.B)
			if err != nil {
				return mt, fmt.Errorf("%s: run %d: %w", name, len(mt.Runs), err)
			}
			mt.Runs = append(mt.Runs, r)
		case f.Num == fMTDConfigIndexToNode:
			vs, err := f.Varints()
			if err != nil {
				return mt, fmt.Errorf("%s: config_index_to_node: %w", name, err)
			}
			mt.ConfigIndexToNode = append(mt.ConfigIndexToNode, vs...)
		}
	}
	if module == nil {
		return mt, fmt.Errorf("%s: ModuleTuningData has no module (field %d)", name, fMTDModule)
	}
	mod, err := hlo.DecodeModuleProto(name, module)
	if err != nil {
		return mt, err
	}
	mt.Module = mod
	if mt.Instructions, err = instructionOrder(module); err != nil {
		return mt, fmt.Errorf("%s: module: %w", name, err)
	}
	return mt, nil
}

// Field numbers of xla.HloModuleProto, HloComputationProto and HloInstructionProto used
// to number the instructions.
const (
	fModuleComputations = 3
	fCompInstructions   = 2
	fInstrName          = 1
)

// instructionOrder lists the instructions of a serialized HloModuleProto in proto order
// as (computation name, instruction name).
func instructionOrder(module []byte) ([][2]string, error) {
	var out [][2]string
	mf, err := pbwire.Fields(module)
	if err != nil {
		return nil, err
	}
	for _, c := range mf {
		if c.Num != fModuleComputations || c.Type != protowire.BytesType {
			continue
		}
		cf, err := pbwire.Fields(c.B)
		if err != nil {
			return nil, err
		}
		var comp string
		for _, f := range cf {
			if f.Num == fInstrName && f.Type == protowire.BytesType { // HloComputationProto.name is field 1 too
				comp = string(f.B)
			}
		}
		for _, in := range cf {
			if in.Num != fCompInstructions || in.Type != protowire.BytesType {
				continue
			}
			inf, err := pbwire.Fields(in.B)
			if err != nil {
				return nil, err
			}
			var name string
			for _, f := range inf {
				if f.Num == fInstrName && f.Type == protowire.BytesType {
					name = string(f.B)
				}
			}
			out = append(out, [2]string{comp, name})
		}
	}
	return out, nil
}

func decodeRun(b []byte) (Run, error) {
	var r Run
	fs, err := pbwire.Fields(b)
	if err != nil {
		return r, err
	}
	for _, f := range fs {
		switch {
		case f.Num == fRunOpConfig && f.Type == protowire.BytesType:
			op, err := pbwire.Fields(f.B)
			if err != nil {
				return r, fmt.Errorf("op_config: %w", err)
			}
			for _, g := range op {
				if g.Num == fOpTileSizeConfig && g.Type == protowire.BytesType {
					t, err := decodeTile(g.B)
					if err != nil {
						return r, fmt.Errorf("tile_size_config: %w", err)
					}
					r.Tile = t
				}
			}
		case f.Num == fRunModuleConfig && f.Type == protowire.BytesType:
			mc, err := pbwire.Fields(f.B)
			if err != nil {
				return r, fmt.Errorf("module_config: %w", err)
			}
			for _, g := range mc {
				if g.Num == fModLayoutConfig && g.Type == protowire.BytesType {
					l, err := decodeLayout(g.B)
					if err != nil {
						return r, fmt.Errorf("layout_config: %w", err)
					}
					r.Layout = l
				}
			}
		case f.Num == fRunError && f.Type == protowire.VarintType:
			r.Error = f.V != 0
		case f.Num == fRunIsDefault && f.Type == protowire.VarintType:
			r.IsDefault = f.V != 0
		case f.Num == fRunProfile && f.Type == protowire.BytesType:
			pf, err := pbwire.Fields(f.B)
			if err != nil {
				return r, fmt.Errorf("profile: %w", err)
			}
			r.HasProfile = true
			for _, g := range pf {
				if g.Type != protowire.VarintType {
					continue
				}
				switch g.Num {
				case fProfComputeCycleCount:
					r.Profile.ComputeCycleCount = int64(g.V)
				case fProfComputeTimeNs:
					r.Profile.ComputeTimeNs = int64(g.V)
				case fProfComputeAndTransferTimeN:
					r.Profile.ComputeAndTransferTimeN = int64(g.V)
				}
			}
		}
	}
	return r, nil
}

func decodeTile(b []byte) (*TileSizeConfig, error) {
	fs, err := pbwire.Fields(b)
	if err != nil {
		return nil, err
	}
	t := &TileSizeConfig{}
	for _, f := range fs {
		var dst *[]int64
		switch f.Num {
		case fTileKernelBounds:
			dst = &t.KernelBounds
		case fTileOutputBounds:
			dst = &t.OutputBounds
		case fTileInputBounds:
			dst = &t.InputBounds
		case fTileIterationBounds:
			dst = &t.IterationBounds
		default:
			continue
		}
		vs, err := f.Varints()
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			*dst = append(*dst, int64(v))
		}
	}
	return t, nil
}

func decodeLayout(b []byte) (*LayoutConfig, error) {
	fs, err := pbwire.Fields(b)
	if err != nil {
		return nil, err
	}
	l := &LayoutConfig{}
	for _, f := range fs {
		if f.Num != fLayoutNodes || f.Type != protowire.BytesType {
			continue
		}
		nf, err := pbwire.Fields(f.B)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", len(l.Nodes), err)
		}
		node := [][]int32{}
		for _, t := range nf {
			if t.Num != fNodeTensors || t.Type != protowire.BytesType {
				continue
			}
			tf, err := pbwire.Fields(t.B)
			if err != nil {
				return nil, fmt.Errorf("node %d tensor %d: %w", len(l.Nodes), len(node), err)
			}
			dims := []int32{}
			for _, d := range tf {
				if d.Num != fTensorDims {
					continue
				}
				vs, err := d.Varints()
				if err != nil {
					return nil, err
				}
				for _, v := range vs {
					dims = append(dims, int32(v))
				}
			}
			node = append(node, dims)
		}
		l.Nodes = append(l.Nodes, node)
	}
	return l, nil
}
