package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/opt"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/internal/outpath"
)

// CompileOptions are the options of `tpucost compile`.
type CompileOptions struct {
	Shapes    string // --shapes: sizes of dynamic dimensions (zoo.ResolveShapes)
	IO        IO
	Globals   *Globals
	Target    TargetFlags
	Src       string
	Config    string
	DumpAfter string
	Out       string
	Passes    string // --passes: opt pass names, "none"; empty: the default pipeline
	Check     bool
	Force     bool
	Fusion    compiler.FusionRule  // --fusion
	Staging   compiler.StagingMode // --staging
}

// NewCmdCompile builds `tpucost compile SRC`.
func NewCmdCompile(ios IO, g *Globals) *cobra.Command {
	o := &CompileOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "compile SRC",
		Short: "Compile a zoo model or HLO file and list its kernels",
		Long: "Compile runs the pass list (" + strings.Join(listedPasses(), ", ") + ") with a JSON config (default: the XLA-like defaults) " +
			"and lists the kernels: name, kind, node count, tile and flags. The simplify group runs the target-independent simplification passes " +
			"(default: " + strings.Join(opt.Names(), ", ") + ", iterated to a fixed point; --passes a,b,c runs those once each, in order, --passes none runs none). " +
			"--dump-after PASS prints the HLO text after that pass instead (any pass of the list; a pass the group iterates, after its first run); " +
			"--out F writes the effective config, which reproduces the program (with the same --passes) and is a template to edit; " +
			"--check runs the HLO verifier after every pass.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Src = args[0]; return runCompile(o) },
	}
	o.Target.bind(cmd)
	bindShapes(cmd, &o.Shapes)
	bindFusion(cmd, &o.Fusion)
	bindStaging(cmd, &o.Staging)
	cmd.Flags().StringVar(&o.Config, "config", "", "JSON config file (see docs/compiler.md: Configs)")
	cmd.Flags().StringVar(&o.DumpAfter, "dump-after", "", "print the module's HLO text after this pass")
	cmd.Flags().StringVar(&o.Out, "out", "", "write the effective config to this file")
	cmd.Flags().StringVar(&o.Passes, "passes", "", "comma-separated simplification passes to run once each instead of the default pipeline, or none ("+
		strings.Join(opt.Names(), ", ")+")")
	cmd.Flags().BoolVar(&o.Force, "force", false, "let --out overwrite a file that is not a config, or a file of a model, dataset, policy or agent directory")
	cmd.Flags().BoolVar(&o.Check, "check", false, "run the HLO verifier after every pass (a failure names the pass)")
	return cmd
}

// listedPasses names the passes of compiler.Passes, not the simplify group's members.
func listedPasses() []string {
	var ns []string
	for _, p := range compiler.Passes() {
		ns = append(ns, p.Name)
	}
	return ns
}

func runCompile(o *CompileOptions) error {
	c, err := o.Target.chip()
	if err != nil {
		return err
	}
	dump := o.IO.Out
	var hloText strings.Builder
	if o.Globals.JSON {
		dump = &hloText // in the JSON document, never as text before it
	}
	simp, err := compiler.ParseSimplify(o.Passes)
	if err != nil {
		return fmt.Errorf("--passes: %w", err)
	}
	if o.Out != "" {
		if err := outpath.CheckFile("--out", o.Out, compiler.ConfigFileKind(), o.Force); err != nil {
			return err
		}
	}
	m, err := zoo.ResolveShapes(o.Src, o.Shapes)
	if err != nil {
		return err
	}
	p, err := compiler.CompileFile(m, o.Config, compiler.Options{Target: c.Target, DumpAfter: o.DumpAfter, Dump: dump, Check: o.Check, Simplify: simp, Fusion: o.Fusion, Staging: o.Staging})
	if err != nil {
		return err
	}
	if o.Out != "" {
		if err := compiler.WriteConfig(o.Out, p.Config); err != nil {
			return err
		}
	}
	if o.DumpAfter != "" && !o.Globals.JSON {
		return nil
	}
	res := compiler.Summarize(p, c.Name, o.DumpAfter, hloText.String())
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, res)
	}
	return res.WriteText(o.IO.Out)
}
