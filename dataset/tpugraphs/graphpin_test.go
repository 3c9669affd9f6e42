package tpugraphs

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestModuleGraphPinned pins the layout import's module graphs (features.CalleeRootEdges,
// each computation featurized by features.Kernel) on the modules of the real layout
// tuning file, byte for byte: the digest was recorded from the import's own builder
// before the module graph moved to package features (the two were compared equal on these
// modules, every zoo model and the real HLO of the test data). A change here changes every
// imported layout row.
func TestModuleGraphPinned(t *testing.T) {
	const want = "1cb48e26c018ffc6e64e5f9d2688391e3c14eea5943150daf53cac826afe7d69"
	mts, err := ReadTuningFile("testdata/module_tuning_data_layout.pb")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, mt := range mts {
		g, pos, err := moduleGraph(mt.Module, v4(t).Target)
		if err != nil {
			t.Fatal(err)
		}
		binary.Write(h, binary.LittleEndian, g.Opcodes)
		for _, v := range append(slices.Clone(g.NodeFeats), g.KernelFeats...) {
			binary.Write(h, binary.LittleEndian, math.Float32bits(v))
		}
		binary.Write(h, binary.LittleEndian, g.EdgeSrc)
		binary.Write(h, binary.LittleEndian, g.EdgeDst)
		for _, c := range mt.Module.Computations {
			for _, in := range c.Instructions {
				binary.Write(h, binary.LittleEndian, pos[[2]string{c.Name, in.Name}])
			}
		}
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != want {
		t.Errorf("module graph digest %s, want %s", got, want)
	}
}
