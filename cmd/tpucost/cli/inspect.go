package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/dataset"
)

// InspectOptions are the options of `tpucost inspect`.
type InspectOptions struct {
	IO      IO
	Globals *Globals
	Dir     string
}

// NewCmdInspect builds `tpucost inspect DIR`.
func NewCmdInspect(ios IO, g *Globals) *cobra.Command {
	o := &InspectOptions{IO: ios, Globals: g}
	return &cobra.Command{
		Use:   "inspect DIR",
		Short: "Summarize a dataset: rows, kernels, programs, samples, runtimes, schema and provenance",
		Long: "Inspect reads every complete part of the dataset in DIR and prints its rows (stored, duplicates across shards included), " +
			"kernels (distinct kernel keys, the rows a trainer reads), programs, samples (measured configs), tasks, runtime min/median/max, " +
			"schema and feature versions, provenance, and the files of each shard. Every file's size and SHA-256 are first checked against " +
			"its shard's manifest; a damaged, missing or unlisted file is reported by name, with a non-zero exit.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error { o.Dir = args[0]; return runInspect(o) },
	}
}

func runInspect(o *InspectOptions) error {
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return err
	}
	s, err := dataset.Inspect(d)
	if err != nil {
		return err
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, s)
	}
	p := s.Provenance
	tasks := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		tasks[i] = string(t)
	}
	w := table(o.IO.Out)
	origin := [2]string{"simulator", fmt.Sprintf("%s on %s (VMEM %d MiB), noise sigma %g, min of %d runs", p.SimulatorVersion, p.Chip, p.VMEMBytes>>20, p.NoiseSigma, p.NoiseRuns)}
	if p.Measured() {
		// Imported measurements: the hardware is the source's; a chip only says what
		// tpucost's own features (of .pb modules) were computed for.
		src := fmt.Sprintf("%s %s, split %s, %d files: runtimes measured on hardware, feature set %s", p.Source, p.Collection, orDash(p.Split), p.SourceFiles, orDash(p.FeatureSet))
		if p.Chip != "" {
			src += fmt.Sprintf("; tpucost features computed for %s", p.Chip)
		}
		if p.RuntimeNormalizers {
			src += "; runtime normalizers recorded"
		}
		origin = [2]string{"source", src}
	}
	for _, kv := range [][2]string{
		{"dir", s.Dir},
		{"format", string(s.Format)},
		{"rows", fmt.Sprintf("%d (stored; %d kernels after removing duplicates across shards)", s.Rows, s.Kernels)},
		{"kernels", fmt.Sprint(s.Kernels)},
		{"programs", fmt.Sprint(s.Programs)},
		{"units", fmt.Sprintf("%d (%d occurrences)", s.Units, s.Occurrences)},
		{"samples", fmt.Sprint(s.Samples)},
		{"tasks", strings.Join(tasks, ",")},
		{"runtime_ns", fmt.Sprintf("min %.6g  median %.6g  max %.6g", s.RuntimeNs.Min, s.RuntimeNs.Median, s.RuntimeNs.Max)},
		{"schema_version", fmt.Sprint(s.SchemaVersion)},
		{"feature_version", fmt.Sprintf("%d (widths: node %d, kernel %d, config %d)", s.FeatureVersion, s.NodeFeatureWidth, s.KernelFeatureWidth, s.ConfigFeatureWidth)},
		origin,
		{"generator", fmt.Sprintf("%s, seed %d, %d configs per kernel, tool %s", p.GeneratorVersion, p.Seed, p.ConfigsPerKernel, p.ToolVersion)},
		{"models", fmt.Sprintf("%d: %s", len(p.Models), abbreviateList(p.Models, 8))},
		{"bytes", fmt.Sprint(s.Bytes)},
		{"checksums", fmt.Sprintf("%d files verified (size and SHA-256) against %s", s.VerifiedFiles, strings.Join(s.Manifests, ","))},
	} {
		fmt.Fprintf(w, "%s\t%s\n", kv[0], kv[1])
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "SHARD\tFILES\tROWS\tBYTES")
	for _, sh := range s.Shards {
		fmt.Fprintf(w, "%dof%d\t%d\t%d\t%d\n", sh.Index, sh.Count, sh.Files, sh.Rows, sh.Bytes)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "FILE\tSHARD\tPART\tUNITS\tROWS\tBYTES")
	for _, f := range s.Files {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d-%d\t%d\t%d\n", f.Name, f.Shard, f.Part, f.UnitFirst, f.UnitLast, f.Rows, f.Bytes)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "COLUMN\tTYPE")
	for _, c := range s.Schema {
		fmt.Fprintf(w, "%s\t%s\n", c.Name, c.Type)
	}
	return w.Flush()
}

// abbreviateList joins the first n items and says how many more there are.
func abbreviateList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s,... (%d more)", strings.Join(items[:n], ","), len(items)-n)
}
