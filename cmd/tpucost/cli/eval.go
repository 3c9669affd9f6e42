package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/gnn/eval"
)

// EvalOptions are the options of `tpucost eval`.
type EvalOptions struct {
	IO      IO
	Globals *Globals
	eval.RunOptions
}

// NewCmdEval builds `tpucost eval`.
func NewCmdEval(ios IO, g *Globals) *cobra.Command {
	o := &EvalOptions{IO: ios, Globals: g}
	cmd := &cobra.Command{
		Use:   "eval --model DIR [--data DIR] [--split random|program] [--plots DIR]",
		Short: "Evaluate a trained model against the analytical baseline on held-out rows",
		Long: "Eval scores a trained model and the analytical model on the test part of the split the model was trained with: " +
			"tile/flags models by APE (per program, averaged), Kendall's tau (per kernel) and slowdown@1/5/10; fusion/layout models by " +
			"MAPE (all kernels, >= 5 us, < 5 us), Kendall's tau over kernels, and the same for whole programs. It prints a per-program " +
			"table and the overall row, learned vs analytical; --plots DIR writes scatter.png, programs.png and training.png.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runEval(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.ModelDir, "model", "", "model checkpoint directory (tpucost train --out)")
	f.StringVar(&o.DataDir, "data", "", "dataset directory (default: the one the model was trained on)")
	f.StringVar(&o.Split, "split", "", "random or program; must be the model's training split (default: it)")
	f.StringVar(&o.PlotsDir, "plots", "", "write PNG plots into this directory")
	cmd.MarkFlagRequired("model")
	return cmd
}

func runEval(o *EvalOptions) error {
	res, err := eval.Run(o.RunOptions)
	if err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, res)
	}
	return WriteEvalTable(o.IO.Out, res)
}

func fmtOpt(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// WriteEvalTable prints an evaluation like the paper's tables: per program, then overall.
func WriteEvalTable(w io.Writer, res *eval.Result) error {
	r := res.Report
	fmt.Fprintf(w, "%s model %s on %s, %s split (test fraction %.2f, seed %d): %d kernels, %d samples, %d programs\n\n",
		r.Task, res.Model, res.Data, r.Split, res.TestFrac, res.SplitSeed, r.Kernels, r.Samples, r.Programs)
	tw := table(w)
	metric := "APE %"
	if !r.Task.Relative() {
		metric = "PROGRAM ERR %"
	}
	fmt.Fprintf(tw, "PROGRAM\tKERNELS\tLEARNED %s\tANALYTICAL %s\n", metric, metric)
	for _, p := range r.PerProgram {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\n", p.Program, p.Kernels, p.Learned, p.Analytical)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = table(w)
	if r.Task.Relative() {
		fmt.Fprintln(tw, "MODEL\tAPE %\tKENDALL TAU\tSLOWDOWN@1\tSLOWDOWN@5\tSLOWDOWN@10")
		for _, m := range []struct {
			name string
			m    eval.Metrics
		}{{"learned", r.Learned}, {"analytical", r.Analytical}} {
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.4f\t%.4f\t%.4f\n", m.name, fmtOpt(m.m.APE, "%.2f"), m.m.KendallTau,
				m.m.SlowdownAt["1"], m.m.SlowdownAt["5"], m.m.SlowdownAt["10"])
		}
	} else {
		fmt.Fprintln(tw, "MODEL\tMAPE %\tMAPE >=5us\tMAPE <5us\tKENDALL TAU\tPROGRAM MAPE %\tPROGRAM TAU")
		for _, m := range []struct {
			name string
			m    eval.Metrics
		}{{"learned", r.Learned}, {"analytical", r.Analytical}} {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t%s\t%s\n", m.name, fmtOpt(m.m.MAPE, "%.2f"), fmtOpt(m.m.MAPEGE5us, "%.2f"),
				fmtOpt(m.m.MAPELT5us, "%.2f"), m.m.KendallTau, fmtOpt(m.m.ProgramMAPE, "%.2f"), fmtOpt(m.m.ProgramTau, "%.3f"))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(res.PlotFiles) > 0 {
		fmt.Fprintf(w, "\nplots: %s\n", strings.Join(res.PlotFiles, ", "))
	}
	return nil
}
