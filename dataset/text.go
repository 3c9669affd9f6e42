package dataset

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes s as text (tpucost inspect): the dataset's summary and provenance,
// then its shards, files and columns.
func (s *Summary) WriteText(out io.Writer) error {
	p := s.Provenance
	tasks := make([]string, len(s.Tasks))
	for i, t := range s.Tasks {
		tasks[i] = string(t)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	origin := [2]string{"simulator", fmt.Sprintf("%s on %s (VMEM %d MiB), noise sigma %g, min of %d runs", p.SimulatorVersion, p.Chip, p.VMEMBytes>>20, p.NoiseSigma, p.NoiseRuns)}
	if p.Measured() {
		// Imported measurements: the hardware is the source's; a chip only says what
		// tpucost's own features (of .pb modules) were computed for.
		what := "runtimes measured on hardware"
		if p.Unlabelled {
			what = "unlabelled (every runtime is 0, as in TpuGraphs' test split: predict can use it, train and eval refuse it)"
		}
		src := fmt.Sprintf("%s %s, split %s, %d files: %s, feature set %s", p.Source, p.Collection, orDash(p.Split), p.SourceFiles, what, orDash(p.FeatureSet))
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
		{"runtime_ns", runtimeLine(s)},
		{"schema_version", fmt.Sprint(s.SchemaVersion)},
		{"feature_version", fmt.Sprintf("%d (widths: node %d, kernel %d, config %d)", s.FeatureVersion, s.NodeFeatureWidth, s.KernelFeatureWidth, s.ConfigFeatureWidth)},
		origin,
		{"generator", fmt.Sprintf("%s, seed %d, %d configs per kernel, tool %s", p.GeneratorVersion, p.Seed, p.ConfigsPerKernel, p.ToolVersion)},
		{"models", fmt.Sprintf("%d: %s", len(p.Models), abbreviateList(p.Models, 8))},
		{"compile", compileSettings(p)},
		{"bytes", fmt.Sprint(s.Bytes)},
		{"checksums", fmt.Sprintf("%d files verified (size and SHA-256) against %s", s.VerifiedFiles, strings.Join(s.Manifests, ","))},
	} {
		if kv[0] == "compile" && kv[1] == "" {
			continue // default compile settings: not recorded
		}
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

// runtimeLine is the runtime_ns line: min, median and max, or that there are none.
func runtimeLine(s *Summary) string {
	if s.Provenance.Unlabelled {
		return "none: unlabelled data (every runtime is 0)"
	}
	return fmt.Sprintf("min %.6g  median %.6g  max %.6g", s.RuntimeNs.Min, s.RuntimeNs.Median, s.RuntimeNs.Max)
}

// compileSettings lists the non-default compile settings a generated dataset records
// (gen --fusion, --staging, --shapes), "" when it records none.
func compileSettings(p Provenance) string {
	var parts []string
	for _, kv := range [][2]string{{"fusion", p.Fusion}, {"staging", p.Staging}, {"shapes", p.Shapes}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	return strings.Join(parts, ", ")
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// abbreviateList joins the first n items and says how many more there are.
func abbreviateList(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s,... (%d more)", strings.Join(items[:n], ","), len(items)-n)
}
