package tpugraphs

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// SyntheticOptions shape synthetic files in the TpuGraphs npz layout: for tests,
// benchmarks of the shapes of the release, and trying the toolkit without the download.
// They are not measurements: the runtimes follow a made-up but learnable rule (see
// Synthetic).
type SyntheticOptions struct {
	Collection string // CollectionTile or CollectionLayout
	// Nodes is the mean number of nodes per graph; each file draws its count uniformly
	// from [Nodes/2, 3·Nodes/2] (at least 2).
	Nodes int
	// Configs is the number of configurations per file (at least 2).
	Configs int
	// ConfigNodes is the number of configurable nodes of a layout file (at most its
	// node count; default Nodes/4, at least 1).
	ConfigNodes int
	// Seed seeds everything: the same options and index give the same file.
	Seed uint64
}

// Synthetic returns synthetic file number index of o's collection, with the keys,
// shapes and dtypes of the release (node_feat (n,140) f32, node_opcode (n,) u8,
// edge_index (m,2) i64 as [user, operand], config_runtime i64; tile: config_feat (c,24)
// f32 and config_runtime_normalizers i64; layout: node_config_ids, node_config_feat
// (c,nc,18) f32 with −1 padding, node_splits). The graph is a DAG whose node i consumes
// one to three earlier nodes. Runtimes: a graph cost from the node features times a
// configuration factor 1 + Σ_j (x_j − x*_j)² over the config features (tile) or over the
// configurable nodes' first layout dims (layout), where the ideal x* depends on the
// graph's features, so a model needs the graph and the configuration to rank them;
// tile runtimes are also multiplied by a per-configuration machine factor in
// [0.9, 1.1] that the normalizer (the default configuration's runtime on the same
// machine) cancels, as in the release.
func Synthetic(o SyntheticOptions, index int) (NPZ, error) {
	if o.Collection != CollectionTile && o.Collection != CollectionLayout {
		return nil, fmt.Errorf("tpugraphs: synthetic collection %q (want tile or layout)", o.Collection)
	}
	if o.Nodes < 2 || o.Configs < 2 {
		return nil, fmt.Errorf("tpugraphs: synthetic files need at least 2 nodes and 2 configs, got %d and %d", o.Nodes, o.Configs)
	}
	rng := rand.New(rand.NewPCG(o.Seed, uint64(index)+0x7379_6e74)) // "synt"
	n := max(2, o.Nodes/2+rng.IntN(o.Nodes+1))
	nodeFeat := make([]float32, n*NodeFeatWidth)
	ops := make([]int64, n)
	var edges []int64
	var graphCost, affinity float64
	for v := 0; v < n; v++ {
		ops[v] = int64(rng.IntN(120))
		f := nodeFeat[v*NodeFeatWidth : (v+1)*NodeFeatWidth]
		for j := range f {
			f[j] = float32(rng.Float64())
		}
		graphCost += 1 + 4*float64(f[0])*float64(f[1])
		affinity += float64(f[2])
		if v > 0 {
			for range 1 + rng.IntN(3) {
				edges = append(edges, int64(v), int64(rng.IntN(v))) // v consumes an earlier node
			}
		}
	}
	affinity /= float64(n) // in [0, 1]: where the ideal configuration lies
	c := o.Configs
	runtime := make([]int64, c)
	z := NPZ{
		"node_feat":   {Shape: []int{n, NodeFeatWidth}, Descr: "<f4", F32: nodeFeat},
		"node_opcode": {Shape: []int{n}, Descr: "|u1", Ints: ops},
		"edge_index":  {Shape: []int{len(edges) / 2, 2}, Descr: "<i8", Ints: edges},
	}
	base := 1e4 * graphCost
	if o.Collection == CollectionTile {
		feat := make([]float32, c*TileConfigWidth)
		norms := make([]int64, c)
		defaultCost := base * configFactor(make([]float32, TileConfigWidth), affinity)
		for i := 0; i < c; i++ {
			x := feat[i*TileConfigWidth : (i+1)*TileConfigWidth]
			if i > 0 { // config 0 is the default: all zeros
				for j := range x {
					x[j] = float32(rng.IntN(5))
				}
			}
			machine := 0.9 + 0.2*rng.Float64()
			runtime[i] = int64(math.Round(base * configFactor(x, affinity) * machine))
			norms[i] = int64(math.Round(defaultCost * machine))
		}
		z["config_feat"] = &Array{Shape: []int{c, TileConfigWidth}, Descr: "<f4", F32: feat}
		z["config_runtime_normalizers"] = &Array{Shape: []int{c}, Descr: "<i8", Ints: norms}
	} else {
		nc := o.ConfigNodes
		if nc <= 0 {
			nc = max(1, o.Nodes/4)
		}
		nc = min(nc, n)
		ids := make([]int64, nc)
		for i, v := range rng.Perm(n)[:nc] {
			ids[i] = int64(v)
		}
		feat := make([]float32, c*nc*LayoutConfigWidth)
		for i := 0; i < c; i++ {
			var dims []float32
			for k := 0; k < nc; k++ {
				x := feat[(i*nc+k)*LayoutConfigWidth : (i*nc+k+1)*LayoutConfigWidth]
				rank := 1 + rng.IntN(4) // each of the 3 tensors: a permutation of rank dims, −1 padded
				for t := 0; t < 3; t++ {
					perm := rng.Perm(rank)
					for d := 0; d < 6; d++ {
						x[t*6+d] = -1
						if d < rank {
							x[t*6+d] = float32(perm[d])
						}
					}
				}
				dims = append(dims, x[0])
			}
			runtime[i] = int64(math.Round(base * configFactor(dims, affinity)))
		}
		z["node_config_ids"] = &Array{Shape: []int{nc}, Descr: "<i8", Ints: ids}
		z["node_config_feat"] = &Array{Shape: []int{c, nc, LayoutConfigWidth}, Descr: "<f4", F32: feat}
		z["node_splits"] = &Array{Shape: []int{1, 2}, Descr: "<i8", Ints: []int64{0, int64(n / 2)}}
	}
	z["config_runtime"] = &Array{Shape: []int{c}, Descr: "<i8", Ints: runtime}
	return z, nil
}

// configFactor is Synthetic's configuration factor: 1 + mean_j (x_j − 3·affinity)² / 4.
func configFactor(x []float32, affinity float64) float64 {
	var s float64
	for _, v := range x {
		d := float64(v) - 3*affinity
		s += d * d
	}
	return 1 + s/float64(4*len(x))
}

// WriteSyntheticTree writes files synthetic npz files per split into root in the
// release's tree (npz/tile/xla/{train,valid,test} or npz/layout/xla/random/...), file
// names "synthetic_<split>_<i>.npz"; splits get 80%, 10% and 10% of the files (at least
// one each). It returns the collection directory (what `tpucost import tpugraphs` takes).
func WriteSyntheticTree(root string, o SyntheticOptions, files int) (string, error) {
	dir := filepath.Join(root, "npz", "tile", "xla")
	if o.Collection == CollectionLayout {
		dir = filepath.Join(root, "npz", "layout", "xla", "random")
	}
	nValid, nTest := max(1, files/10), max(1, files/10)
	nTrain := max(1, files-nValid-nTest)
	idx := 0
	for _, sp := range []struct {
		name string
		n    int
	}{{"train", nTrain}, {"valid", nValid}, {"test", nTest}} {
		if err := os.MkdirAll(filepath.Join(dir, sp.name), 0o755); err != nil {
			return "", fmt.Errorf("tpugraphs: %w", err)
		}
		for i := 0; i < sp.n; i++ {
			z, err := Synthetic(o, idx)
			if err != nil {
				return "", err
			}
			idx++
			if err := WriteNPZFile(filepath.Join(dir, sp.name, fmt.Sprintf("synthetic_%s_%d.npz", sp.name, i)), z, true); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}
