package compiler

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// TestZooCompilesWithVerifier compiles every zoo model and the real XLA dump with the
// verifier running after every pass.
func TestZooCompilesWithVerifier(t *testing.T) {
	type src struct {
		name  string
		build func() (*hlo.Module, error)
	}
	srcs := []src{{"graphsage_tf", func() (*hlo.Module, error) { return hlo.ParseFile("hlo/testdata/graphsage_tf.hlo") }}}
	for _, m := range zoo.All() {
		srcs = append(srcs, src{m.Name, m.Build})
	}
	for _, s := range srcs {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			m, err := s.build()
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(m, nil, Options{Target: testTarget, Check: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Kernels) == 0 {
				t.Fatal("no kernels")
			}
			// Every live dot and convolution of the input ends up in some kernel (dead
			// code is dropped, as XLA does).
			heroes, kernelsWithHero := 0, 0
			for _, in := range liveInstructions(m.Entry) {
				if in.Opcode == hlo.OpDot || in.Opcode == hlo.OpConvolution {
					heroes++
				}
			}
			for _, k := range p.Kernels {
				for _, in := range k.Comp.Instructions {
					if in.Opcode == hlo.OpDot || in.Opcode == hlo.OpConvolution {
						kernelsWithHero++
					}
				}
			}
			if kernelsWithHero < heroes {
				t.Errorf("%d dots/convolutions in the model, %d in its kernels", heroes, kernelsWithHero)
			}
		})
	}
}
