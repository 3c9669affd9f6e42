package tpusim

import (
	"fmt"
	"io"

	"github.com/tpucost/tpucost/compiler"
)

// SimRequest is `tpucost sim` of one program: Src at Shapes with the config file Config,
// compiled by Compile for the chip with the fusion rule and staging mode, and simulated
// (SimulateWith) over Chips chips.
type SimRequest struct {
	Src    string // a zoo model or an HLO file
	Shapes string // sizes of its dynamic dimensions (empty: its own)
	Config string // a config file (empty: the defaults)
	// Chips is the number of chips that collectives without replica groups span (>= 0;
	// 0: the module's replica_count × num_partitions).
	Chips int
	// Partitions is the number of devices a module with sharding annotations is
	// partitioned over (compiler.Options.Partitions; 0: its num_partitions).
	Partitions int
	Fusion     compiler.FusionRule
	Staging    compiler.StagingMode
	// Compile builds and compiles Src (tpusim does not build models: the CLI's resolves
	// Src with zoo.ResolveShapes).
	Compile compiler.CompileSource
	// Warn receives the warning of collectives whose size nothing gives (nil: dropped).
	Warn io.Writer
}

// Simulate compiles the program for c and reports it (SimulateWith). Collectives that
// name no replica group when nothing gives their size are timed as 1-chip no-ops, with a
// warning to Warn (Report.UnsizedCollectives).
func (r SimRequest) Simulate(c Chip) (*Report, error) {
	if r.Compile == nil {
		return nil, fmt.Errorf("sim: no Compile")
	}
	if r.Partitions < 0 {
		return nil, fmt.Errorf("--partitions \"%d\": want an integer >= 0", r.Partitions)
	}
	p, err := r.Compile(r.Src, r.Shapes, r.Config, compiler.Options{Target: c.Target, Fusion: r.Fusion, Staging: r.Staging, Partitions: r.Partitions})
	if err != nil {
		return nil, err
	}
	if r.Chips < 0 {
		return nil, fmt.Errorf("--chips \"%d\": want an integer >= 0", r.Chips)
	}
	rep, err := SimulateWith(p, c, Options{Chips: r.Chips})
	if err != nil {
		return nil, err
	}
	rep.Staged = rep.Staged || r.Staging != compiler.StagingOff
	if rep.UnsizedCollectives > 0 && r.Warn != nil {
		fmt.Fprintf(r.Warn, "WARNING: %d collective(s) name no replica group and nothing gives their size (no --chips, the module header says 1 chip): "+
			"each is timed as a 1-chip no-op (unsized_collectives in --json); pass --chips N\n", rep.UnsizedCollectives)
	}
	return rep, nil
}
