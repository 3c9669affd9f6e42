package tpusim

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestRealFilesSimulate compiles every real XLA dump of compiler/hlo/testdata/real
// (except the one invalid by design, import.hlo) and simulates it on every chip preset:
// every kernel time is finite and positive, and the report's approximate share is a
// fraction.
func TestRealFilesSimulate(t *testing.T) {
	files, err := filepath.Glob("../compiler/hlo/testdata/real/*.hlo")
	if err != nil || len(files) < 13 {
		t.Fatalf("real files: %v (%d)", err, len(files))
	}
	for _, f := range files {
		if filepath.Base(f) == "import.hlo" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := hlo.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range PresetNames() {
				c := preset(t, name)
				p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
				if err != nil {
					t.Fatalf("%s: compile: %v", name, err)
				}
				r, err := Simulate(p, c)
				if err != nil {
					t.Fatalf("%s: simulate: %v", name, err)
				}
				for _, k := range r.Kernels {
					if k.KernelReport == nil {
						continue // a loop, conditional or collective step
					}
					if !(k.SimNs > 0) || math.IsInf(k.SimNs, 0) {
						t.Errorf("%s: kernel %s time %g", name, k.Name, k.SimNs)
					}
				}
				if r.ApproximateShare < 0 || r.ApproximateShare > 1 || (r.ApproximateOps > 0) != (r.ApproximateShare > 0) {
					t.Errorf("%s: %d approximate ops, share %g", name, r.ApproximateOps, r.ApproximateShare)
				}
			}
		})
	}
}

// Ops the simulator times with the streaming model only are counted in the report, with
// the share of time of the kernels that hold them.
func TestApproximateOpsReported(t *testing.T) {
	m, err := hlo.Parse("a.hlo", []byte(`HloModule m
ENTRY e {
  sq = f32[64,64] parameter(0)
  ch = f32[64,64] cholesky(sq), lower=true
  ROOT n = f32[64,64] negate(ch)
}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := preset(t, "v4")
	r, err := Simulate(compileDefault(t, m, c, nil), c)
	if err != nil {
		t.Fatal(err)
	}
	approxNs := 0.0
	for _, k := range r.Kernels {
		if k.ApproximateOps > 0 {
			approxNs += k.SimNs
		}
	}
	const tol = 1e-12 // same sums, float rounding only
	if r.ApproximateOps != 1 || approxNs == 0 || approxNs == r.TotalNs || math.Abs(r.ApproximateShare-approxNs/r.TotalNs) > tol {
		t.Errorf("approximate ops %d, share %g (kernels %+v)", r.ApproximateOps, r.ApproximateShare, r.Kernels)
	}
	// The streaming model: at least the operand and result bytes at HBM bandwidth.
	for _, k := range r.Kernels {
		if k.ApproximateOps > 0 && k.SimNs < 2*64*64*4/c.HBMBandwidth*1e9 {
			t.Errorf("cholesky kernel %g ns, faster than streaming its bytes", k.SimNs)
		}
	}
}

// The HloModuleProtos embedded in the TpuGraphs files compile and simulate on every
// preset.
func TestTuningDataModulesSimulate(t *testing.T) {
	data, err := os.ReadFile("../compiler/hlo/testdata/tpugraphs/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	m, err := hlo.DecodeModuleProtoField("layout.pb", data, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range PresetNames() {
		c := preset(t, name)
		p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r, err := Simulate(p, c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !(r.TotalNs > 0) || math.IsInf(r.TotalNs, 0) || len(r.Kernels) < 100 {
			t.Errorf("%s: %d kernels, %g ns", name, len(r.Kernels), r.TotalNs)
		}
	}
}

// BenchmarkRealImportCompileSimulate times the whole path on the largest real text dump:
// parse, compile with defaults, simulate on v4 (the target: a 4 MB dump in < 5 s).
func BenchmarkRealImportCompileSimulate(b *testing.B) {
	const path = "../compiler/hlo/testdata/real/resnet50_keras_jax_f32.hlo"
	c, err := Preset("v4")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		m, err := hlo.ParseFile(path)
		if err != nil {
			b.Fatal(err)
		}
		p, err := compiler.Compile(m, nil, compiler.Options{Target: c.Target})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Simulate(p, c); err != nil {
			b.Fatal(err)
		}
	}
}
