package gym

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
	"github.com/tpucost/tpucost/zoo"
)

// The bundled real HLO (testdata/README.md names their sources).
//
//go:embed testdata/*.hlo
var benchFS embed.FS

// BenchPrefix marks a bundled real HLO program: "bench:graphsage_tf" is
// testdata/graphsage_tf.hlo of this package.
const BenchPrefix = "bench:"

// Load loads program: "bench:NAME" is a bundled real HLO file (BundledHLO), anything
// else goes through zoo.Resolve (an HLO file path or a zoo model name).
func Load(program string) (*hlo.Module, error) {
	if name, ok := strings.CutPrefix(program, BenchPrefix); ok {
		file := "testdata/" + name + ".hlo"
		b, err := benchFS.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: no bundled benchmark %q (bundled: %s)", program, name, strings.Join(BundledHLO(), ", "))
		}
		m, err := hlo.Parse(program, b)
		if err != nil {
			return nil, err
		}
		if err := hlo.CheckBounded(m); err != nil {
			return nil, m.Wrap(err) // program:line:col of the instruction
		}
		return m, nil
	}
	return zoo.Resolve(program)
}

// BundledHLO lists the bundled real HLO programs, as "bench:NAME".
func BundledHLO() []string {
	ents, err := benchFS.ReadDir("testdata")
	if err != nil {
		return nil // the embedded directory always exists
	}
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".hlo"); ok {
			out = append(out, BenchPrefix+n)
		}
	}
	slices.Sort(out)
	return out
}

// Benchmark sets: zoo training steps (forward, backward and optimizer update — the
// graphs XLA Gym optimized) and real XLA dumps, split by family variant: for each family
// some size variants train, the others are held out, so evaluation is on programs (and
// sizes) never trained on. A variant is a model whatever its batch size and whether it
// is the inference graph or the training step (Variant): no variant is in both sets. The
// default pipeline (opt.Default) removes 8–27% of the ops of the zoo's training steps and
// 4–46% of the real dumps' listed here (docs/gym.md), so there is work for
// an agent on every program listed; the other real dumps of compiler/hlo/testdata/real
// are left out (the pipeline removes nothing or at most one op of them, or they are not
// programs: import.hlo).

// trainSet is the training benchmark set.
var trainSet = []string{
	"gpt2_tiny_s128_b8_train",
	"bert_mini_s128_b16_train",
	"resnet18_b32_train",
	"resnet18v2_b16_train",
	"transformer_tiny_s32_b64_train",
	"mobilenet_v1_050_160_b16_train",
	"lstm_lm_h256_t16_b32_train",
	"mlp_96x2_b1_train",
	"mlp_1024x6_b16_train",
	"wavernn_h512_t24_b16_train",
	"dlrm_small_b32_train",
	"unet_d3_c32_r128_b8_train",
	"convdraw_s8_c32_r32_b16_train",
	"rnn_char_h96_t24_b1_train",
	"flax_gpt2_tiny_s128_b8_train",
	"flax_gpt2_mini_s128_b8_train",
	"flax_bert_mini_s128_b16_train",
	"flax_bert_small_s128_b8_train",
	"bench:bench_scan_N2000_M3",
	"bench:host_offload",
}

// heldOutSet is the held-out benchmark set: other size variants of the training
// families, ViT (a family not trained on), and real dumps (resnet50_keras_jax_f32 with
// the zoo's held-out ResNet-50; two real JAX training steps exported before optimization:
// MaxText's decoder language model and Keras-on-JAX DLRM).
var heldOutSet = []string{
	"gpt2_small_s128_b8_train",
	"distilgpt2_s256_b4_train",
	"bert_tiny_s128_b32_train",
	"bert_base_s128_b8_train",
	"resnet50_b32_train",
	"resnet20_cifar_b64_train",
	"resnet50v2_b8_train",
	"transformer_small_s64_b32_train",
	"mobilenet_v2_100_224_b32_train",
	"lstm2_lm_h650_t20_b32_train",
	"mlp_768x3_b8_train",
	"wavernn_h896_t32_b8_train",
	"dlrm_criteo_b64_train",
	"vit_ti16_224_b32_train",
	"flax_gpt2_small_s128_b8_train",
	"flax_distilgpt2_s256_b4_train",
	"flax_bert_tiny_s128_b32_train",
	"flax_bert_base_s128_b8_train",
	"bench:graphsage_tf",
	"bench:llama3_8b_bf16_activation_offloading_1x8",
	"bench:resnet50_keras_jax_f32",
	"bench:maxtext_1n1g_train_step",
	"bench:dlrm_keras_jax_f32_train_step",
}

// Programs returns a benchmark set by name: "train", "heldout" or "all" (both, training
// first). The lists are copies.
func Programs(set string) ([]string, error) {
	switch set {
	case "train":
		return slices.Clone(trainSet), nil
	case "heldout":
		return slices.Clone(heldOutSet), nil
	case "all":
		return slices.Concat(trainSet, heldOutSet), nil
	}
	return nil, fmt.Errorf("gym: no benchmark set %q (sets: train, heldout, all)", set)
}

// ExpandPrograms expands a program list: each element is a benchmark set name (train,
// heldout, all) or a program. The result keeps the first occurrence of each program.
func ExpandPrograms(list []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range list {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("gym: empty program name in %q", strings.Join(list, ","))
		}
		ps := []string{p}
		if s, err := Programs(p); err == nil {
			ps = s
		}
		for _, q := range ps {
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	return out, nil
}
