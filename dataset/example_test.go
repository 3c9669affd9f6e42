package dataset_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/tpusim"
)

// Write a small tile dataset with the generator (what tpucost gen runs) and read it back:
// one row per kernel key, each with its measured tile configs.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "tiles")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	req := gen.Request{Task: "tile", Models: "mlp_768x3_b8", Out: dir, Configs: 4, Variants: 1, Workers: 1, Seed: 1,
		Format: "arrow", Shard: "0/1", NoiseRuns: 3, PartRows: 2048}
	if _, err := req.Run(context.Background(), func() (tpusim.Chip, error) { return tpusim.Preset("v4") }); err != nil {
		log.Fatal(err)
	}

	d, err := dataset.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("task:", d.Provenance.Task, "chip:", d.Provenance.Chip, "models:", d.Provenance.Models)
	err = d.Rows(dataset.ReadOptions{}, func(r *dataset.Row) error {
		fastest := 0
		for i, ns := range r.RuntimesNs {
			if ns < r.RuntimesNs[fastest] {
				fastest = i
			}
		}
		fmt.Printf("%s (%s, %d nodes): %d configs, fastest %s\n", r.KernelName, r.Kind, r.Graph.Nodes(), len(r.Configs), r.Configs[fastest])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// task: tile chip: v4 models: [mlp_768x3_b8]
	// fusion.multiply.5 (kOutput, 24 nodes): 4 configs, fastest tile=16x2048x768;flags=db2/u1
	// fusion.multiply.11 (kOutput, 23 nodes): 4 configs, fastest tile=16x512x3072;flags=db2/u1
	// fusion.multiply.17 (kOutput, 23 nodes): 4 configs, fastest tile=16x256x768;flags=db2/u1
	// fusion.add.9 (kOutput, 6 nodes): 3 configs, fastest tile=16x128x384;flags=nodb/u1
	// fusion.reduce.0 (kInput, 3 nodes): 1 configs, fastest tile=16x128;flags=nodb/u1
	// fusion.exponential.0 (kLoop, 5 nodes): 1 configs, fastest tile=16x128;flags=nodb/u1
	// fusion.reduce.1 (kInput, 3 nodes): 1 configs, fastest tile=16x128;flags=nodb/u1
	// fusion.divide.0 (kLoop, 4 nodes): 1 configs, fastest tile=16x128;flags=nodb/u1
}
