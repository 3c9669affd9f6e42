// Package cli holds tpucost's cobra commands. Each command is an Options struct, a
// NewCmd constructor that binds flags to it, and a run function that calls library
// packages and formats their result (a table, or JSON with --json). No other logic lives
// here.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/buildinfo"
	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// IO is where a command reads and writes: results on Out, progress and errors on Err.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Globals are the flags every command has.
type Globals struct {
	JSON bool
}

// NewRootCmd builds the tpucost command tree.
func NewRootCmd(ios IO) *cobra.Command {
	g := &Globals{}
	root := &cobra.Command{
		Use:           "tpucost",
		Short:         "Learned performance models of an XLA-like TPU compiler",
		Long:          "tpucost generates training data on a bundled TPU simulator, trains and evaluates GraphSAGE cost models, and runs model-guided autotuning.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(ios.Out)
	root.SetErr(ios.Err)
	root.SetIn(ios.In)
	root.PersistentFlags().BoolVar(&g.JSON, "json", false, "machine-readable JSON output on stdout")
	root.SetFlagErrorFunc(cliflag.Rewrite)
	bindMaxInput(root)
	setVersion(root, buildinfo.Read(versions()))
	root.AddCommand(
		NewCmdZoo(ios, g),
		NewCmdCompile(ios, g),
		NewCmdSim(ios, g),
		NewCmdGen(ios, g),
		NewCmdInspect(ios, g),
		NewCmdTrain(ios, g),
		NewCmdPredict(ios, g),
		NewCmdEval(ios, g),
		NewCmdTune(ios, g),
		NewCmdDemo(ios, g),
		NewCmdGym(ios, g),
		NewCmdImport(ios, g), NewCmdExport(ios, g),
		NewCmdValidate(ios, g), NewCmdCalibrate(ios, g),
		NewCmdBitserial(ios, g),
	)
	cliflag.RequireKnownSubcommands(root)
	return root
}

// ExitInterrupted is the exit code of a command stopped by SIGINT or SIGTERM (128+SIGINT,
// as shells report).
const ExitInterrupted = 130

// Main runs the command line and returns the exit code: errors are printed as one line.
// Every command runs under one context that SIGINT and SIGTERM cancel (cmd.Context());
// after the first signal the default action is restored, so a second one kills at once.
func Main(args []string, in io.Reader, out, errw io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return MainContext(ctx, args, in, out, errw)
}

// MainContext is Main under ctx (no signal handling of its own). A command that stops
// because ctx is cancelled exits with ExitInterrupted. An error is printed as one line
// after the command that failed, "tpucost CMD: ...", in people's words (errorLine).
func MainContext(ctx context.Context, args []string, in io.Reader, out, errw io.Writer) int {
	root := NewRootCmd(IO{In: in, Out: out, Err: errw})
	root.SetArgs(args)
	if cmd, err := root.ExecuteContextC(ctx); err != nil {
		interrupted := ctx.Err() != nil && errors.Is(err, context.Canceled)
		fmt.Fprintln(errw, errorLine(cmd, err, interrupted))
		if interrupted {
			return ExitInterrupted
		}
		return 1
	}
	return 0
}

// errorLine is err as the one line tpucost prints: the command's path ("tpucost sim"),
// then the message flattened to one line, without a repeat of the command's name at its
// start. An interrupted command's message does not end in Go's "context canceled": it
// says "interrupted" (once) in its place.
func errorLine(cmd *cobra.Command, err error, interrupted bool) string {
	path, name := "tpucost", ""
	if cmd != nil {
		path = cmd.CommandPath()
		if cmd.HasParent() {
			name = cmd.Name()
		}
	}
	msg := oneLine(err)
	if name != "" {
		msg = strings.TrimPrefix(msg, name+": ")
	}
	if interrupted {
		msg = interruptedText(msg)
	}
	return path + ": " + msg
}

// interruptedText is msg without Go's "context canceled": it ends in "interrupted"
// instead, unless it says so already.
func interruptedText(msg string) string {
	const canceled = "context canceled"
	msg = strings.NewReplacer(" ("+canceled+")", "", ": "+canceled, "", "; "+canceled, "", canceled, "").Replace(msg)
	switch msg = strings.TrimSpace(msg); {
	case msg == "":
		return "interrupted"
	case strings.Contains(msg, "interrupted"):
		return msg
	}
	return msg + ": interrupted"
}

// oneLine flattens a (possibly joined) error into a single line.
func oneLine(err error) string {
	s := strings.TrimSpace(err.Error())
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

// versionJSON is the root command's annotation holding --version --json's output.
const versionJSON = "version_json"

// versions are the data and model versions of this build, owned by the packages that
// define them; buildinfo, on the ground floor, receives them.
func versions() buildinfo.Versions {
	return buildinfo.Versions{Simulator: tpusim.Version, FeatureSchema: features.SchemaVersion,
		DatasetSchema: dataset.SchemaVersion, Generator: gen.Version}
}

// setVersion makes `tpucost --version` print info's line, and `--version --json` info as
// JSON (buildinfo.Info): cobra prints the version before any command runs, from a
// template that reads the --json flag.
func setVersion(root *cobra.Command, info buildinfo.Info) {
	js, _ := json.MarshalIndent(info, "", "  ") // cannot fail: strings, ints and a bool
	root.Version = info.String()
	root.Annotations = map[string]string{versionJSON: string(js)}
	root.SetVersionTemplate(`{{if eq (.PersistentFlags.Lookup "json").Value.String "true"}}{{index .Annotations "` + versionJSON + `"}}{{else}}{{.Version}}{{end}}` + "\n")
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// TargetFlags select the chip to compile for and simulate on.
type TargetFlags struct {
	Chip     string
	ChipFile string // a preset file (tpusim.LoadChipFile), in place of Chip
	VMEMMiB  int    // 0: the preset's
	vmemSet  func() bool
	chipSet  func() bool
}

func (t *TargetFlags) bind(cmd *cobra.Command) { t.bindDefault(cmd, tpusim.DefaultChip) }

// bindDefault is bind with another default preset (validate's files are TPU v3 runs).
func (t *TargetFlags) bindDefault(cmd *cobra.Command, preset string) {
	cmd.Flags().StringVar(&t.Chip, "chip", preset, "chip preset: "+strings.Join(tpusim.PresetNames(), ", "))
	cmd.Flags().StringVar(&t.ChipFile, "chip-file", "", "a chip preset `FILE` (as tpucost calibrate writes) in place of --chip")
	t.chipSet = func() bool { return cmd.Flags().Changed("chip") }
	cmd.Flags().IntVar(&t.VMEMMiB, "vmem", 0, fmt.Sprintf("override the chip's VMEM per core in MiB, 1-%d (v4's is not public)", tpusim.MaxVMEMMiB))
	t.vmemSet = func() bool { return cmd.Flags().Changed("vmem") }
}

// chip resolves the flags to the chip they select, reading a --chip-file under ctx
// (tpusim.ChipSpec.ResolveContext).
func (t *TargetFlags) chip(ctx context.Context) (tpusim.Chip, error) {
	return t.spec().ResolveContext(ctx)
}

// chipOf is chip under ctx as the func a library request resolves its chip with.
func (t *TargetFlags) chipOf(ctx context.Context) func() (tpusim.Chip, error) {
	return func() (tpusim.Chip, error) { return t.chip(ctx) }
}

// spec is the flags as given: which of --chip and --vmem were set on the command line.
func (t *TargetFlags) spec() tpusim.ChipSpec {
	return tpusim.ChipSpec{Preset: t.Chip, File: t.ChipFile, VMEMMiB: t.VMEMMiB,
		PresetSet: t.chipSet != nil && t.chipSet(), VMEMSet: t.vmemSet != nil && t.vmemSet()}
}

// checkedString is a flag value holding the string as given once check accepts it
// (cliflag.CheckedString): a bad value fails naming the flag, in check's words.
func checkedString(p *string, typ string, check func(string) error) pflag.Value {
	return cliflag.CheckedString(p, typ, check)
}

// shapesUsage is the help of --shapes, which every command that builds SRC has.
const shapesUsage = "size dynamic dimensions, NAME=V[,NAME=V]: a zoo model's seq (zoo list: DYNAMIC), an HLO file's bounded dims d0, d1, ... " +
	"(entry parameters' f32[<=N] dims in parameter order, V <= N); default: the model's own shape, the HLO bounds"

// bindShapes binds --shapes to p: the one flag helper of every command that builds a
// source. The value is parsed (zoo.ParseShapes) as the flag is set, so an empty value, a
// list or a bad number fails naming the flag; zoo.ResolveShapes checks the names and
// bounds against the source.
func bindShapes(cmd *cobra.Command, p *string) {
	cmd.Flags().Var(checkedString(p, "shapes", func(s string) error { _, err := zoo.ParseShapes(s); return err }), "shapes", shapesUsage)
}

// fusionUsage is the help of --fusion, which compile, sim, gen and tune have.
const fusionUsage = "fusion rule for the decisions a config leaves open: xla (the XLA-like heuristic) or partition " +
	"(partition-based fusion after Apollo, refined by the tile-cost feedback; docs/compiler.md)"

// bindFusion binds --fusion to p (default xla): the one flag helper of every command
// that picks a fusion rule. The value is parsed (compiler.ParseFusionRule) as the flag is
// set, so a bad rule fails naming the flag.
func bindFusion(cmd *cobra.Command, p *compiler.FusionRule) {
	*p = compiler.FusionXLA
	cmd.Flags().Var(cliflag.Parsed[compiler.FusionRule]{P: p, Parse: compiler.ParseFusionRule, TypeName: "rule",
		Show: func(r compiler.FusionRule) string { return string(r) }}, "fusion", fusionUsage)
}

// compileSource returns the CLI's compiler.CompileSource: it loads SRC (a zoo model or
// an HLO file) at shapes (--shapes; empty: its own) and compiles it under opts with the
// config file cfgPath, reading both files under ctx (their size limits, --max-input-bytes,
// and cancellation: zoo.ResolveShapesContext, compiler.CompileFileContext).
func compileSource(ctx context.Context) compiler.CompileSource {
	return func(src, shapes, cfgPath string, opts compiler.Options) (*compiler.Program, error) {
		m, err := zoo.ResolveShapesContext(ctx, src, shapes)
		if err != nil {
			return nil, err
		}
		return compiler.CompileFileContext(ctx, m, cfgPath, opts)
	}
}

// stagingUsage is --staging's help, shared by every command that compiles.
const stagingUsage = "VMEM staging of kernel outputs for their consumers: off (default: every array through HBM), " +
	"on (every candidate edge that fits VMEM) or auto (those the analytical model says are faster); see docs/compiler.md"

// bindStaging binds --staging to p: the one flag helper of every command that compiles.
func bindStaging(cmd *cobra.Command, p *compiler.StagingMode) {
	cmd.Flags().Var(cliflag.Parsed[compiler.StagingMode]{P: p, Parse: compiler.ParseStagingMode, TypeName: "mode",
		Show: compiler.StagingMode.String, Want: "one of " + strings.Join(compiler.StagingModes(), ", ")}, "staging", stagingUsage)
}
