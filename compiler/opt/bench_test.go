package opt

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// largestZooModel is the zoo's largest graph (about 8,400 ops before simplification).
const largestZooModel = "transformer_base_s128_b16_train"

func buildZoo(b *testing.B, name string) *hlo.Module {
	b.Helper()
	m, err := zoo.Build(name)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkDefaultLargest times Default on the zoo's largest model (the target: well
// under a second).
func BenchmarkDefaultLargest(b *testing.B) {
	m := buildZoo(b, largestZooModel)
	b.ReportAllocs()
	for b.Loop() {
		c := m.Clone()
		if _, err := Default().Run(c); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPassLargest times each pass once on the zoo's largest model.
func BenchmarkPassLargest(b *testing.B) {
	m := buildZoo(b, largestZooModel)
	for _, p := range All() {
		b.Run(p.Name, func(b *testing.B) {
			for b.Loop() {
				c := m.Clone()
				if _, err := p.Run(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDefaultSynthetic times Default on a 100,000-node synthetic graph, to show
// that the passes scale linearly.
func BenchmarkDefaultSynthetic(b *testing.B) {
	m, err := zoo.Synthetic(100000, 1)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := m.Clone()
		if _, err := Default().Run(c); err != nil {
			b.Fatal(err)
		}
	}
}
