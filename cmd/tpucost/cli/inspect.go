package cli

import (
	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/internal/cliflag"
)

// InspectOptions are the options of `tpucost inspect`.
type InspectOptions struct {
	cmdIO
	Dir string
}

// NewCmdInspect builds `tpucost inspect DIR`.
func NewCmdInspect(ios IO, g *Globals) *cobra.Command {
	o := &InspectOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	return &cobra.Command{
		Use:   "inspect DIR",
		Short: "Summarize a dataset: rows, kernels, programs, samples, runtimes, schema and provenance",
		Long: "Inspect reads every complete part of the dataset in DIR and prints its rows (stored, duplicates across shards included), " +
			"kernels (distinct kernel keys, the rows a trainer reads), programs, samples (measured configs), tasks, runtime min/median/max, " +
			"schema and feature versions, provenance, and the files of each shard. Every file's size and SHA-256 are first checked against " +
			"its shard's manifest; a damaged, missing or unlisted file is reported by name, with a non-zero exit. " +
			"A measured-config table (gen --task bitserial --backend cpu) is summarized likewise: configs, problems, median times, noise, " +
			"rejected repeats and re-measurements, the backend, machine and load it was measured on, its verified file.",
		Args: cliflag.OneArg("one dataset directory (DIR)"),
		RunE: func(_ *cobra.Command, args []string) error { o.Dir = args[0]; return runInspect(o) },
	}
}

func runInspect(o *InspectOptions) error {
	if dataset.IsMeasured(o.Dir) { // a measured-config table (gen --backend cpu)
		m, err := dataset.OpenMeasured(o.Dir)
		if err != nil {
			return err
		}
		return o.printResult(dataset.InspectMeasured(m), nil)
	}
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return err
	}
	return o.printResult(dataset.Inspect(d))
}
