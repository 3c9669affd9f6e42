package tpusim

import (
	"context"
	"fmt"
	"strings"
)

// MaxVMEMMiB bounds a VMEM override (ChipSpec.VMEMMiB, --vmem): 1 TiB, far above any
// chip, and its bytes fit an int64.
const MaxVMEMMiB = 1 << 20

// ChipSpec selects a chip the way every command line does: a preset by name (--chip) or
// a preset file (--chip-file), and an optional VMEM override (--vmem). Resolve's errors
// name those flags.
type ChipSpec struct {
	Preset string // a preset name (Preset); used unless File is set
	File   string // a preset file (LoadChipFile), in place of Preset
	// VMEMMiB overrides the chip's VMEM per core, in MiB (WithVMEM); 0: the preset's.
	VMEMMiB int
	// PresetSet says Preset was given explicitly (not a default): with File, an error.
	PresetSet bool
	// VMEMSet says VMEMMiB was given explicitly: then 0 is out of range, not "the preset's".
	VMEMSet bool
}

// Resolve returns the chip s selects: the preset file or the named preset, with the VMEM
// override applied. Giving both an explicit preset and a file, an unknown preset, a bad
// file, or a VMEM override outside [1, MaxVMEMMiB] is an error. A file is read under
// context.Background() (ResolveContext).
func (s ChipSpec) Resolve() (Chip, error) { return s.ResolveContext(context.Background()) }

// ResolveContext is Resolve reading the preset file under ctx (LoadChipFileContext): its
// size limit and cancellation.
func (s ChipSpec) ResolveContext(ctx context.Context) (Chip, error) {
	var c Chip
	var err error
	switch {
	case s.File != "" && s.PresetSet:
		return c, fmt.Errorf("--chip and --chip-file: give one")
	case s.File != "":
		c, err = LoadChipFileContext(ctx, s.File)
	default:
		if c, err = Preset(s.Preset); err != nil {
			return c, fmt.Errorf("--chip %q: unknown chip, want one of %s", s.Preset, strings.Join(PresetNames(), ", "))
		}
	}
	if err != nil {
		return c, err
	}
	if (s.VMEMMiB != 0 || s.VMEMSet) && (s.VMEMMiB < 1 || s.VMEMMiB > MaxVMEMMiB) {
		return c, fmt.Errorf("--vmem \"%d\": want MiB in [1, %d]", s.VMEMMiB, MaxVMEMMiB)
	}
	if s.VMEMMiB > 0 {
		c = c.WithVMEM(int64(s.VMEMMiB) << 20)
	}
	return c, nil
}

// Default is s with a default target (a model's, say: the chip its training data was
// generated for): preset, when s names no preset explicitly and preset is not empty, with
// vmemMiB as the VMEM override unless s has one.
func (s ChipSpec) Default(preset string, vmemMiB int) ChipSpec {
	if !s.PresetSet && preset != "" {
		s.Preset = preset
		if s.VMEMMiB == 0 {
			s.VMEMMiB = vmemMiB
		}
	}
	return s
}
