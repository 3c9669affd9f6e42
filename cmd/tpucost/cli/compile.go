package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// raggedCompileOther names a flag compile --lengths does not take ("" when none).
func raggedCompileOther(o *CompileOptions) string {
	for _, f := range []struct {
		set  bool
		name string
	}{{o.Shapes != "", "--shapes"}, {o.Config != "", "--config"}, {o.DumpAfter != "", "--dump-after"}, {o.PassStats, "--pass-stats"},
		{o.Out != "", "--out"}, {o.Passes != "", "--passes"}, {o.Pipeline != "" && o.Pipeline != opt.DefaultSimplifyPipeline, "--pipeline"}, {o.Fusion != "" && o.Fusion != compiler.FusionXLA, "--fusion"},
		{o.Staging != compiler.StagingOff, "--staging"}} {
		if f.set {
			return f.name
		}
	}
	return ""
}

// CompileOptions are the options of `tpucost compile`: the flags of a compile request.
type CompileOptions struct {
	cmdIO
	Target TargetFlags
	compiler.CompileRequest
	Lengths string // --lengths: the ragged form's kernels (ragged.CompileRequest)
}

// NewCmdCompile builds `tpucost compile SRC`.
func NewCmdCompile(ios IO, g *Globals) *cobra.Command {
	o := &CompileOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "compile SRC",
		Short: "Compile a zoo model or HLO file and list its kernels",
		Long: "Compile runs the pass list (" + strings.Join(compiler.ListedPasses(), ", ") + ") with a JSON config (default: the XLA-like defaults) " +
			"and lists the kernels: name, kind, node count, tile and flags. The simplify group runs the target-independent simplification passes " +
			"(default: the " + opt.DefaultSimplifyPipeline + " group, " + strings.Join(opt.DefaultNames(), ", ") + ", iterated to a fixed point; --pipeline " + otherPipelines() + " runs another group instead; --passes a,b,c runs those once each, in order, --passes none runs none). " +
			"--dump-after PASS prints the HLO text after that pass instead (any pass of the list; a pass the group iterates, after its first run); " +
			"PASS may be all or a regular expression matched against whole names (as XLA's --xla_dump_hlo_pass_re: 'alg.*'), each module then after a line // after pass NAME; " +
			"--pass-stats adds a line per pass run: its iteration, wall time and op count before and after; " +
			"--out F writes the effective config, which reproduces the program (with the same --pipeline and --passes) and is a template to edit; " +
			"--check runs the HLO verifier after every pass.",
		Args: cliflag.OneArg("one HLO file or zoo model name (SRC)"),
		RunE: func(cmd *cobra.Command, args []string) error { o.Src = args[0]; return runCompile(cmd.Context(), o) },
	}
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file (see docs/compiler.md: Configs)")
	cmd.Flags().StringVar(&o.DumpAfter, "dump-after", "", "print the module's HLO text after this pass (a name, all, or a regular expression)")
	cmd.Flags().BoolVar(&o.PassStats, "pass-stats", false, "report every pass run's wall time and op count before and after")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the effective config to this file")
	cmd.Flags().StringVar(&o.Passes, "passes", "", "comma-separated simplification passes to run once each instead of the default pipeline, or none ("+
		strings.Join(opt.Names(), ", ")+")")
	cmd.Flags().StringVar(&o.Pipeline, "pipeline", "", "the simplification group iterated to a fixed point: "+pipelineHelp()+" (default: "+opt.DefaultSimplifyPipeline+")")
	cmd.Flags().BoolVar(&o.Force, "force", false, "let --out overwrite a file that is not a config, or a file of a model, dataset, policy or agent directory")
	cmd.Flags().BoolVar(&o.Check, "check", false, "run the HLO verifier after every pass (a failure names the pass)")
	cmd.Flags().Var(lengthsFlag(&o.Lengths), "lengths", "compile the ragged form of a bert_*/gpt2_* model over these sequence lengths and list each kernel as per_sequence, packed or dense (docs/ragged.md)")
	return cmd
}

// otherPipelines names the simplification groups of opt.SimplifyPipelines but the default, joined by "|".
func otherPipelines() string {
	var ns []string
	for _, n := range opt.SimplifyPipelineNames() {
		if n != opt.DefaultSimplifyPipeline {
			ns = append(ns, n)
		}
	}
	return strings.Join(ns, "|")
}

// pipelineHelp lists the simplification groups of opt.SimplifyPipelines with what they run.
func pipelineHelp() string {
	var ps []string
	for _, p := range opt.SimplifyPipelines() {
		ps = append(ps, p.Name+" ("+p.Doc+")")
	}
	return strings.Join(ps, "; ")
}

func runCompile(ctx context.Context, o *CompileOptions) error {
	c, err := o.Target.chip(ctx)
	if err != nil {
		return err
	}
	if o.Lengths != "" {
		return o.printResult(ragged.CompileRequest{Src: o.Src, Lengths: o.Lengths, Other: raggedCompileOther(o)}.Compile(c.Target))
	}
	o.Load = func(src, shapes string) (*hlo.Module, error) { return zoo.ResolveShapesContext(ctx, src, shapes) }
	if !o.Globals.JSON {
		o.Dump = o.IO.Out // streamed as the pass runs: a later failure keeps it
	}
	return o.printResult(o.Compile(ctx, c.Target, c.Name))
}
