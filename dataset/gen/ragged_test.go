package gen

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/zoo"
)

// raggedOpts are the options of a small gen --lengths run: gpt2_tiny over two explicit
// batches of four sequences up to 128 (the same kernel graphs) and a named distribution.
func raggedOpts(t *testing.T, dir string) Options {
	t.Helper()
	o := genOpts(t, dataset.TaskFusion, dir)
	o.Models, o.Configs = []string{"gpt2_tiny_s128_b8"}, 1
	o.Lengths = []string{"37,64,100,128", "16,24,40,128", "zipf:16-128:16:1"}
	return o
}

// TestGenerateRagged: gen --lengths writes, for every model and batch, the program
// MODEL@lengths=SPEC whose rows are the compiled ragged program's kernels: each row's
// runtime is that kernel's compiled ragged time (ragged.Parts.Time, sim --lengths'), not
// the padded kernel's; its analytical estimate the same work's analytical one; its
// kernel features the kernel's own followed by the ragged extent's of that batch, so one
// kernel graph over two batches is two rows that differ in exactly the ragged block; and
// the rows, times the kernels' weights, add up to sim --lengths' ragged_ns − pack_ns.
// Timing the rows by the padded program (the kernel as compiled) or featurizing without
// the lengths fails it.
func TestGenerateRagged(t *testing.T) {
	// sumTol: float64 sums of ~30 terms in another order (the rounding, ~1e-15, with margin).
	const sumTol = 1e-9
	o := raggedOpts(t, t.TempDir())
	if _, err := Generate(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	p := d.Provenance
	wantProgs := []string{"gpt2_tiny_s128_b8@lengths=37,64,100,128", "gpt2_tiny_s128_b8@lengths=16,24,40,128", "gpt2_tiny_s128_b8@lengths=zipf:16-128:16:1"}
	if !slices.Equal(p.Models, wantProgs) || !slices.Equal(p.Lengths, o.Lengths) || p.FeatureSet != features.RaggedSet ||
		!reflect.DeepEqual(p.FeatureSchema, features.RaggedSchema()) {
		t.Fatalf("provenance: models %v lengths %v feature set %q, want %v, %v, %s and the ragged schema", p.Models, p.Lengths, p.FeatureSet, wantProgs, o.Lengths, features.RaggedSet)
	}
	m, _ := zoo.Lookup("gpt2_tiny_s128_b8")
	if f, err := p.Family(wantProgs[0]); err != nil || f != m.Family {
		t.Errorf("family %q, %v; want %q", f, err, m.Family)
	}
	rows := map[string]dataset.Row{}
	if err := d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error { rows[r.KernelKey] = r.Clone(); return nil }); err != nil {
		t.Fatal(err)
	}
	// tails[k.Key] are the kernel's ragged blocks, one per batch it occurs in.
	tails, added := map[string][][]float32{}, map[string]bool{}
	ragged0 := 0
	for i, spec := range o.Lengths {
		lengths, err := ragged.ParseLengths(spec)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := ragged.NewParts(m, lengths, o.Chip)
		if err != nil {
			t.Fatal(err)
		}
		progs, err := parts.CompileDefault()
		if err != nil {
			t.Fatal(err)
		}
		timed, err := parts.Time(progs)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0 // Σ row time × weight over the program's kernels
		for j, k := range progs.Ragged.Kernels {
			kr := timed.Kernels[j]
			r, ok := rows[raggedKey(k.Key, lengths)]
			if !ok {
				t.Fatalf("%s: no row for kernel %s", wantProgs[i], k.Name)
			}
			if r.Program != wantProgs[i] {
				t.Errorf("kernel %s: program %s, want %s", k.Name, r.Program, wantProgs[i])
			}
			// Noise is off: the row's time is the compiled ragged kernel's, exactly.
			if len(r.RuntimesNs) != 1 || r.RuntimesNs[0] != kr.Ns || r.AnalyticalNs[0] != kr.AnalyticalNs {
				t.Errorf("%s kernel %s (%s): runtime %v analytical %v, want the compiled ragged %v and %v", wantProgs[i], k.Name, kr.Kind, r.RuntimesNs, r.AnalyticalNs, kr.Ns, kr.AnalyticalNs)
			}
			sum += r.RuntimesNs[0] * k.Weight
			if kr.Ragged && kr.Ns != kr.PaddedNs {
				ragged0++
			}
			kf := r.Graph.KernelFeats
			if len(kf) != features.KernelWidth+features.RaggedWidth {
				t.Fatalf("kernel %s: %d kernel features, want %d", k.Name, len(kf), features.KernelWidth+features.RaggedWidth)
			}
			own := features.OfKernel(k, o.Chip.Target).KernelFeats
			if !slices.Equal(kf[:features.KernelWidth], own) {
				t.Errorf("kernel %s: the kernel's own features differ from features.OfKernel", k.Name)
			}
			off := kr.OffsetsNs > 0
			if want := features.RaggedFeatures(compiler.RaggedKind(kr.Kind), off, lengths, compiler.PackAlign); !slices.Equal(kf[features.KernelWidth:], want) {
				t.Errorf("kernel %s: ragged features %v, want %v", k.Name, kf[features.KernelWidth:], want)
			}
			if !added[r.KernelKey] { // once per batch (the layers repeat kernels)
				added[r.KernelKey] = true
				tails[k.Key] = append(tails[k.Key], kf[features.KernelWidth:])
			}
		}
		// The rows add up to sim --lengths' compiled ragged time without the packing.
		rep, err := ragged.TimeZoo(m.Name, lengths, o.Chip)
		if err != nil {
			t.Fatal(err)
		}
		if want := rep.RaggedNs - rep.PackNs; math.Abs(sum-want) > sumTol*want {
			t.Errorf("%s: rows add up to %.1f ns, sim --lengths' ragged_ns - pack_ns is %.1f", wantProgs[i], sum, want)
		}
	}
	if ragged0 == 0 {
		t.Error("no ragged kernel is timed other than padded: the rows would be the padded program's")
	}
	// The same kernel graph over the two batches: the ragged blocks differ (the lengths).
	both := 0
	for key, tl := range tails {
		if len(tl) >= 2 {
			both++
			if slices.Equal(tl[0], tl[1]) {
				t.Errorf("kernel %s: the same ragged features over two batches of lengths", key)
			}
		}
	}
	if both == 0 {
		t.Error("no kernel graph occurs in both batches")
	}
}

// TestGenerateRaggedRefusals: bad --lengths input, a model without a ragged form, a
// length above the model's bound and the settings a ragged program does not take are
// one-line errors, before anything is written.
func TestGenerateRaggedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"zero", func(o *Options) { o.Lengths = []string{"0,64"} }, "--lengths"},
		{"empty", func(o *Options) { o.Lengths = []string{""} }, "--lengths"},
		{"bad form", func(o *Options) { o.Lengths = []string{"uniform:1-2"} }, "want uniform:LO-HI:N:SEED"},
		{"twice", func(o *Options) { o.Lengths = []string{"64,32", "64,32"} }, "listed twice"},
		{"too long", func(o *Options) { o.Lengths = []string{"64,4096"} }, "--lengths 64,4096"},
		{"no ragged form", func(o *Options) { o.Models = []string{"resnet18_b1"} }, "has no ragged form"},
		{"tile task", func(o *Options) { o.Task, o.Variants = dataset.TaskTile, 1 }, "want --task fusion --configs 1"},
		{"configs", func(o *Options) { o.Configs = 4 }, "want --task fusion --configs 1"},
		{"shapes", func(o *Options) { o.Shapes = "seq=64" }, "drop --shapes"},
	} {
		o := raggedOpts(t, filepath.Join(t.TempDir(), "out"))
		tc.edit(&o)
		_, err := Generate(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q", tc.name, err, tc.want)
		}
		if ents, _ := os.ReadDir(o.Out); len(ents) > 0 {
			t.Errorf("%s: wrote %d entries before refusing", tc.name, len(ents))
		}
	}
}
