package tpugraphs

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes res as text (tpucost import tpugraphs): a line per dataset written, a
// note per unlabelled one, and the .pb modules' accounting.
func (res *ImportReport) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "DIR\tCOLLECTION\tSPLIT\tFEATURE_SET\tTASK\tFILES\tROWS\tSAMPLES")
	for _, s := range res.Datasets {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", s.Dir, s.Collection, orDash(s.Split), s.FeatureSet, s.Task, s.Files, s.Rows, s.Samples)
	}
	for _, s := range res.Datasets {
		if s.Unlabelled {
			fmt.Fprintf(w, "\n%s: unlabelled (every runtime is 0, as in TpuGraphs' test split): predict can use it, train and eval refuse it\n", s.Dir)
		}
	}
	if p := res.PB; p.Modules > 0 {
		fmt.Fprintf(w, "\n.pb: %d modules, %d runs (%d layout): %d imported (%d modules), %d with an error (skipped), %d untimed (skipped), %d modules not mapped\n",
			p.Modules, p.Runs, p.LayoutRuns, p.ImportedRuns, p.ImportedModule, p.ErrorRuns, p.UntimedRuns, p.Unmapped)
		for _, m := range res.UnmappedModules {
			fmt.Fprintf(w, "  not mapped: %s\n", m)
		}
	}
	return w.Flush()
}

// WriteText writes res as text (tpucost export tpugraphs): where, what and how many.
func (res *ExportReport) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "out\t%s\n", res.Out)
	fmt.Fprintf(w, "collection\t%s\n", res.Collection)
	fmt.Fprintf(w, "files\t%d (train %d, valid %d, test %d)\n", res.Files, res.SplitFiles["train"], res.SplitFiles["valid"], res.SplitFiles["test"])
	fmt.Fprintf(w, "split\t%s\n", res.Split)
	fmt.Fprintf(w, "configs\t%d\n", res.Configs)
	fs := res.FeatureSet
	if fs == "" {
		fs = "tpucost (see " + ExportManifestName + ")"
	}
	fmt.Fprintf(w, "feature_set\t%s\n", fs)
	return w.Flush()
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
