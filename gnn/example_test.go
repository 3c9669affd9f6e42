package gnn_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// Train a tiny tile model on a generated dataset, load it as a Predictor and rank the
// tile options of a kernel it has not seen. The output states properties of the run,
// not the network's values (which differ in their last bits between the pure-Go and the
// OpenBLAS build).
func ExampleTrainRequest() {
	dir, err := os.MkdirTemp("", "train")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "model")
	v4 := func() (tpusim.Chip, error) { return tpusim.Preset("v4") }
	g := gen.Request{Task: "tile", Models: "mlp_768x3_b8,dlrm_small_b32,mlp_96x2_b1", Out: data, Configs: 8, Variants: 1, Workers: 1,
		Seed: 1, Format: "arrow", Shard: "0/1", NoiseRuns: 3, PartRows: 2048}
	if _, err := g.Run(context.Background(), v4); err != nil {
		log.Fatal(err)
	}
	tr := gnn.TrainRequest{Task: "tile", Data: data, Out: out, Epochs: 2, Schedule: "constant", Batch: 8, MaxConfigs: 8, LR: 1e-3,
		Seed: 1, Split: "random", TestFraction: 0.2, ValFraction: 0.1, SplitSeed: 1, Patience: "off", Layers: 2, Hidden: 16,
		Reduce: "mean,max", Features: "paper", Prior: "auto", Ensemble: 1}
	sum, err := tr.Train(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("trained %d epochs of a %s model with the %s loss\n", sum.Epochs, sum.Task, sum.Loss)

	chip, _ := v4()
	pred, err := gnn.LoadPredictor(out, chip.Target)
	if err != nil {
		log.Fatal(err)
	}
	defer pred.Close()
	m, err := zoo.Resolve("mlp_1000x4_b64")
	if err != nil {
		log.Fatal(err)
	}
	p, err := compiler.Compile(m, nil, compiler.Options{Target: chip.Target})
	if err != nil {
		log.Fatal(err)
	}
	k := p.Kernels[0]
	var choices []cost.Planned
	for _, tc := range p.Space.Tile {
		if tc.Key == k.Key {
			choices = tc.Planned()
		}
	}
	scores, err := pred.ScoreKernel(k, choices)
	if err != nil {
		log.Fatal(err)
	}
	finite := true
	for _, s := range scores {
		finite = finite && !math.IsNaN(s) && !math.IsInf(s, 0)
	}
	fmt.Printf("kernel %s: %d tile options scored, all finite: %v\n", k.Name, len(scores), finite)
	// Output:
	// trained 2 epochs of a tile model with the rank-hinge-gap loss
	// kernel fusion.tanh.0: 64 tile options scored, all finite: true
}
