package tune

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// TestPolicyGraphPinned pins the rl policy's encoder graph (features.OperandEdges with the
// policy's node features and distinct-user counts) on the policy graphs of zoo programs
// and a real XLA module, byte for byte: the digests were recorded from the policy's own
// builder, on the module it printed after layout assignment and parsed again, before the
// module graph moved to package features and the graph was taken in memory (the two were
// compared equal on every zoo model and real module of the test data). A change here changes what every
// saved policy reads.
func TestPolicyGraphPinned(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"mlp_768x3_b8", "44e30e7e7ad3cabfa31a85562ee76e59252261e99e45db41de6dd909edd3efed"},
		{"bert_tiny_s128_b32", "30795133dd4fde7e63380c05aba84235619315972249e02b397b046faac3dd0b"},
		{"../compiler/hlo/testdata/real/dynamic_slice_loop_1x2048x768_bf16.hlo", "e1f24ef92261929add8174ba04f3d74fdfd55d68464e964c1a083ca1b5a52858"},
	} {
		_, _, _, g := rlProgram(t, c.src)
		gi, err := newGraphIndex(g)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, v := range gi.x {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		binary.Write(h, binary.LittleEndian, gi.src)
		binary.Write(h, binary.LittleEndian, gi.dst)
		for _, comp := range g.Computations {
			for _, in := range comp.Instructions {
				binary.Write(h, binary.LittleEndian, [2]int64{int64(gi.node[in]), int64(gi.users[in])})
			}
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != c.want {
			t.Errorf("%s: policy graph digest %s, want %s", c.src, got, c.want)
		}
	}
}
