package gym

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes m as text (tpucost gym train): the programs, iterations and the first
// and last iterations' returns; dir is where the agent was written.
func (m *AgentMeta) WriteText(w io.Writer, dir string) error {
	h := m.History
	if len(h) == 0 {
		return fmt.Errorf("agent trained on %d programs: no iteration recorded", len(m.Programs))
	}
	first, last := h[0], h[len(h)-1]
	_, err := fmt.Fprintf(w, "agent trained on %d programs, %d iterations: mean return %.4f -> %.4f, greedy %.4f -> %.4f (return = fraction of the ops removed); written to %s\n",
		len(m.Programs), len(h), first.MeanReturn, last.MeanReturn, first.GreedyReturn, last.GreedyReturn, dir)
	return err
}

// WriteText writes rep as text (tpucost gym eval): a line per program with the agent's
// op-count reduction beside the default pipeline's and random orders', their means, and
// the agent's gain.
func (rep *EvalReport) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROGRAM\tOPS\tDEFAULT\tSTEPS\tDEFAULT-ONCE\tSTEPS\tDEFAULT@AGENT-STEPS\tAGENT\tSTEPS\tRANDOM@AGENT-STEPS")
	for _, p := range rep.Programs {
		fmt.Fprintf(w, "%s\t%d\t%.1f%%\t%d\t%.1f%%\t%d\t%.1f%%\t%.1f%%\t%d\t%.1f%% ± %.1f\n", p.Program, p.InitialOps, 100*p.DefaultReduction, p.DefaultSteps,
			100*p.DefaultOnceReduction, p.DefaultOnceSteps, 100*p.DefaultSameStepsReduction, 100*p.AgentReduction, p.AgentSteps,
			100*p.RandomReduction, 100*p.RandomReductionSD)
	}
	fmt.Fprintf(w, "mean\t\t%.1f%%\t%.1f\t%.1f%%\t\t%.1f%%\t%.1f%%\t%.1f\t%.1f%%\n", 100*rep.DefaultReduction, rep.MeanDefaultSteps,
		100*rep.DefaultOnceReduction, 100*rep.DefaultSameStepsReduction, 100*rep.AgentReduction, rep.MeanAgentSteps, 100*rep.RandomReduction)
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "agent vs default (fixed point): %+.1f%%, vs default once: %+.1f%% op-count reduction (reduction = fraction of the initial ops removed; %d programs)\n",
		rep.AgentVsDefaultPct, rep.AgentVsDefaultOncePct, len(rep.Programs))
	return err
}
