package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/internal/cliflag"
)

// NewCmdImport builds `tpucost import`, the parent of the importers of other datasets.
func NewCmdImport(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Import another dataset's files as tpucost datasets",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdImportTpuGraphs(ios, g))
	return cmd
}

// NewCmdExport builds `tpucost export`, the parent of the exporters to other formats.
func NewCmdExport(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write tpucost datasets in another dataset's format",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(NewCmdExportTpuGraphs(ios, g))
	return cmd
}

// ImportTpuGraphsOptions are the options of `tpucost import tpugraphs`.
type ImportTpuGraphsOptions struct {
	cmdIO
	Target TargetFlags
	tpugraphs.ImportRequest
}

// NewCmdImportTpuGraphs builds `tpucost import tpugraphs SRC... --out DIR`.
func NewCmdImportTpuGraphs(ios IO, g *Globals) *cobra.Command {
	o := &ImportTpuGraphsOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "tpugraphs SRC... --out DIR",
		Short: "Import TpuGraphs npz files and raw tuning .pb files",
		Long: "Reads TpuGraphs npz files (a file, a directory, or the release's npz/{tile,layout}/... tree; collection and split come " +
			"from the path, else --collection) and raw tpu_graphs TuningData/ModuleTuningData .pb files, and writes tpucost datasets " +
			"with source=tpugraphs provenance. npz files keep TpuGraphs' features (feature set tpugraphs-v1); .pb tile runs get " +
			"tpucost's graph features with the raw TPU tile as config, .pb layout runs the whole module's graph with TpuGraphs' per-node " +
			"layout encoding; runs with an error are counted, not imported. " +
			"One output dataset is written to DIR, several to DIR/<collection>[-<split>] (and DIR/tile-pb, DIR/layout-pb).",
		Args: cliflag.AtLeastOneArg("one or more TpuGraphs npz or .pb files or directories (SRC...)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Sources = args
			return runImportTpuGraphs(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "output directory (required)")
	cmd.Flags().StringVar(&o.Collection, "collection", "", "tile or layout, for npz files whose path does not say")
	cmd.Flags().StringVar(&o.Format, "format", string(dataset.FormatArrow), "arrow or parquet")
	o.Target.bind(cmd)
	return cmd
}

func runImportTpuGraphs(ctx context.Context, o *ImportTpuGraphsOptions) error {
	o.Progress = o.IO.Err
	return o.printResult(o.Import(ctx, o.Target.chipOf(ctx)))
}

// ExportTpuGraphsOptions are the options of `tpucost export tpugraphs`.
type ExportTpuGraphsOptions struct {
	cmdIO
	tpugraphs.ExportRequest
}

// NewCmdExportTpuGraphs builds `tpucost export tpugraphs DIR --out NPZDIR`.
func NewCmdExportTpuGraphs(ios IO, g *Globals) *cobra.Command {
	o := &ExportTpuGraphsOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "tpugraphs DIR --out NPZDIR",
		Short: "Write a dataset in the TpuGraphs npz layout",
		Long: "Writes every kernel of the dataset in DIR as one npz file of the TpuGraphs tile collection (node_feat, node_opcode, " +
			"edge_index, config_feat, config_runtime, config_runtime_normalizers), or layout collection for imported per-node " +
			"datasets, in NPZDIR/{train,valid,test} (--split), so that TpuGraphs' Python baselines can train on it. " +
			"See docs/datasets.md (TpuGraphs) for what maps.",
		Args: cliflag.OneArg("one dataset directory (DIR)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return runExportTpuGraphs(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "output directory for the npz files (required)")
	cmd.Flags().StringVar(&o.Split, "split", dataset.SplitProgram, "kernels into NPZDIR/{train,valid,test} (10% valid, 10% test): "+strings.Join(tpugraphs.ExportSplits(), ", "))
	cmd.Flags().Int64Var(&o.Seed, "seed", 1, "seed of the split")
	return cmd
}

func runExportTpuGraphs(ctx context.Context, o *ExportTpuGraphsOptions) error {
	o.Progress = o.IO.Err
	return o.printResult(o.Export(ctx))
}
