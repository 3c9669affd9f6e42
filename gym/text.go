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
	if m.Algorithm == AlgoEffect {
		_, err := fmt.Fprintf(w, "pass-effect model trained on %d programs, %d epochs: mean squared error %.4f -> %.4f; written to %s\n",
			len(m.Programs), len(h), first.Loss, last.Loss, dir)
		return err
	}
	what := "ops removed"
	if m.Reward == RewardTime {
		what = "simulated time saved"
	}
	_, err := fmt.Fprintf(w, "agent trained on %d programs, %d iterations: mean return %.4f -> %.4f, greedy %.4f -> %.4f (return = fraction of the %s); written to %s\n",
		len(m.Programs), len(h), first.MeanReturn, last.MeanReturn, first.GreedyReturn, last.GreedyReturn, what, dir)
	return err
}

// WriteText writes rep as text (tpucost gym eval): a line per program with the op
// counts each order reached (NO-CANON: XLA's order without its canonicalizers; BEAM: beam
// search in a random pass order) and their
// simulated times, the agent's gain over the default and over NO-CANON, and the means.
func (rep *EvalReport) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROGRAM\tOPS\tDEFAULT\tNO-CANON\tRANDOM\tGREEDY\tBEAM\tAGENT\tGAIN\tGAIN-NO-CANON\tDEFAULT-MS\tAGENT-MS")
	pct := func(g *float64) string {
		if g == nil {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", 100**g)
	}
	for _, p := range rep.Programs {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%.3f\t%.3f\n", p.Program, p.InitialOpCount, p.Default.OpCount,
			p.DefaultWithoutCanonicalization.OpCount, p.Random.OpCount, p.Greedy.OpCount, p.Beam.OpCount, p.Agent.OpCount,
			pct(p.GainVsDefault), pct(p.GainVsDefaultWithoutCanonicalization), p.Default.SimNs/1e6, p.Agent.SimNs/1e6)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "ops removed (mean fraction): default %.1f%%, random %.1f%%, greedy %.1f%%, beam %.1f%%, agent %.1f%%; beam vs default: mean gain %+.1f%%; agent vs default: mean gain %+.1f%%, pooled %+.1f%%, time %+.1f%%; vs default without canonicalization (no-canon): mean %+.1f%%, pooled %+.1f%% "+
		"(%d programs, budget %d compiler calls, %d steps, best prefixes by %s; agent search %s, beam width %d, children %d; default = %s)\n",
		100*rep.MeanDefaultReduction, 100*rep.MeanRandomReduction, 100*rep.MeanGreedyReduction, 100*rep.MeanBeamReduction, 100*rep.MeanAgentReduction, 100*rep.MeanBeamGainVsDefault,
		100*rep.MeanGainVsDefault, 100*rep.PooledGainVsDefault, 100*rep.MeanSimGainVsDefault,
		100*rep.MeanGainVsDefaultWithoutCanonicalization, 100*rep.PooledGainVsDefaultWithoutCanonicalization, len(rep.Programs), rep.Budget, rep.MaxSteps, judgedBy(rep.JudgedBy), rep.AgentSearch, rep.BeamWidth, rep.BeamChildren, rep.DefaultPipeline)
	return err
}

// judgedBy names what an evaluation's best prefixes minimised ("" in reports of earlier
// builds: the op count).
func judgedBy(j string) string {
	if j == RewardTime {
		return "simulated time"
	}
	return "op count"
}
