package features_test

import (
	"fmt"
	"log"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Featurize the kernels of a compiled zoo model: each kernel is a graph of its fused ops
// (opcode ids, node features, operand -> user edges) with kernel-level features, and its
// tile and flags are a config feature vector.
func ExampleOfKernel() {
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		log.Fatal(err)
	}
	chip, err := tpusim.Preset("v4")
	if err != nil {
		log.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		log.Fatal(err)
	}
	for _, k := range p.Kernels[:3] {
		g := features.OfKernel(k, chip.Target)
		if err := g.Validate(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %d nodes, %d edges, %d node features each, %d kernel features, %d config features\n",
			k.Name, g.Nodes(), len(g.EdgeSrc), len(g.NodeFeats)/g.Nodes(), len(g.KernelFeats), len(features.Config(k.Choice)))
	}
	// Output:
	// fusion.multiply.5: 24 nodes, 27 edges, 75 node features each, 35 kernel features, 31 config features
	// fusion.multiply.11: 23 nodes, 26 edges, 75 node features each, 35 kernel features, 31 config features
	// fusion.multiply.17: 23 nodes, 26 edges, 75 node features each, 35 kernel features, 31 config features
}

// The opcode vocabulary is stable across versions: an opcode's id never changes.
func ExampleOpcodeID() {
	vocab := features.Vocabulary()
	for _, op := range []hlo.Opcode{hlo.OpAdd, hlo.OpDot, hlo.OpConvolution} {
		id := features.OpcodeID(op)
		fmt.Println(op, id, vocab[id])
	}
	// Output:
	// add 19 add
	// dot 50 dot
	// convolution 51 convolution
}
