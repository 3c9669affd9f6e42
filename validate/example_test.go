package validate_test

import (
	"fmt"
	"log"
	"path/filepath"

	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/validate"
)

// Validate the simulator against real TPU v3 runs: replay TpuGraphs' tile tuning runs of
// a real XLA program in tpucost's terms, time every configuration with the simulator and
// the analytical model, and score their rankings against what the TPU measured.
func ExampleValidate() {
	chip, err := tpusim.Preset("v3")
	if err != nil {
		log.Fatal(err)
	}
	file := filepath.Join("..", "dataset", "tpugraphs", "testdata", "op_tuning_data.pb")
	r, err := validate.Validate([]string{file}, validate.Options{Chip: chip})
	if err != nil {
		log.Fatal(err)
	}
	tr := r.Tile
	fmt.Printf("%d real runs replayed on %d kernels, %d kernels scored (>= %d runs)\n", tr.Configs, tr.Kernels, tr.ScoredKernels, tr.MinConfigs)
	fmt.Printf("Kendall tau: simulator %.2f, analytical %.2f\n", tr.Sim.KendallTau, tr.Analytical.KendallTau)
	fmt.Printf("top-1 slowdown: simulator %.1f%%, XLA's default %.1f%%\n", 100*tr.Sim.Top1Slowdown, 100*tr.Default.Top1Slowdown)
	// Output:
	// 747 real runs replayed on 14 kernels, 8 kernels scored (>= 10 runs)
	// Kendall tau: simulator 0.83, analytical 0.77
	// top-1 slowdown: simulator 2.1%, XLA's default 1.8%
}
