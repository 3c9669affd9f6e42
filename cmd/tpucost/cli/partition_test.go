package cli

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// tpModel is the zoo's GPT-2 medium annotated for 8-way tensor parallelism: 24 layers,
// 2 all-reduces of [512,1024] bf16 partial sums a layer, one of the vocabulary-split
// embedding gather.
const tpModel = "gpt2_medium_s256_b2_tp8"

// simPartitionJSON is what these tests read of `sim --json`.
type simPartitionJSON struct {
	Partitions   *int     `json:"partitions"`
	Chips        int      `json:"chips"`
	TotalNs      float64  `json:"total_ns"`
	CollectiveNs *float64 `json:"collective_ns"`
	Kernels      []struct {
		Name        string   `json:"name"`
		Control     string   `json:"control"`
		SimNs       float64  `json:"sim_ns"`
		DeviceShape *string  `json:"device_shape"`
		Collective  string   `json:"collective"`
		Bytes       *float64 `json:"bytes"`
		GroupSize   int      `json:"group_size"`
	} `json:"kernels"`
}

func simPartitions(t *testing.T, args ...string) simPartitionJSON {
	t.Helper()
	out, errs, code := run(append([]string{"sim", tpModel, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("sim %v: exit %d: %s", args, code, errs)
	}
	var r simPartitionJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Partitions == nil || r.CollectiveNs == nil {
		t.Fatalf("sim %v --json has no partitions or collective_ns", args)
	}
	return r
}

// TestSimPartitions: `sim --json` on a GSPMD module (the header's num_partitions=8, and
// --partitions 8 alike) reports partitions 8 and 8 chips, every kernel's device_shape,
// and the all-reduces the partitioner inserted as collective steps (kind, bytes,
// group_size), whose sim_ns sum to collective_ns.
func TestSimPartitions(t *testing.T) {
	def, eight := simPartitions(t), simPartitions(t, "--partitions", "8")
	if def.TotalNs != eight.TotalNs {
		t.Errorf("default %g ns, --partitions 8 %g ns: want the header's num_partitions=8 by default", def.TotalNs, eight.TotalNs)
	}
	r := eight
	if *r.Partitions != 8 || r.Chips != 8 {
		t.Errorf("partitions %d, chips %d; want 8, 8", *r.Partitions, r.Chips)
	}
	const arBytes = 512 * 1024 * 2 // [512,1024] bf16: the residual stream of 2×256 tokens
	collectives, sum, kernels := 0, 0.0, 0
	for _, e := range r.Kernels {
		switch e.Control {
		case "":
			kernels++
			if e.DeviceShape == nil || *e.DeviceShape == "" {
				t.Errorf("kernel %s has no device_shape", e.Name)
			}
		case "collective":
			collectives++
			sum += e.SimNs
			if e.Collective != "all-reduce" || e.Bytes == nil || *e.Bytes != arBytes || e.GroupSize != 8 {
				t.Errorf("collective %s: kind %q, bytes %v, group_size %d; want an all-reduce of %d bytes over 8", e.Name, e.Collective, e.Bytes, e.GroupSize, arBytes)
			}
		}
	}
	if kernels == 0 || collectives != 2*24+1 {
		t.Errorf("%d kernels, %d collectives; want 49 all-reduces (2 a layer, 1 for the embedding)", kernels, collectives)
	}
	// The report's collective_ns is the sum of its collective steps (the same floats,
	// added in another order: 1e-9 is rounding).
	if *r.CollectiveNs <= 0 || math.Abs(*r.CollectiveNs-sum) > 1e-9*sum {
		t.Errorf("collective_ns %g, its steps sum to %g", *r.CollectiveNs, sum)
	}
	out, _, code := run("sim", tpModel)
	if code != 0 || !strings.Contains(out, "partitioned over 8 devices") {
		t.Errorf("text report (exit %d) does not say it is partitioned over 8 devices:\n%s", code, tail(out, 3))
	}
}

// TestSimPartitionsOne: --partitions 1 is one device running the whole global program:
// partitions 1, chips 1, no collective, each kernel's device_shape its global shape, the
// text report saying so; and it takes what the unannotated model takes (within
// maxOneDeviceDiff). A module without annotations reports partitions 0.
func TestSimPartitionsOne(t *testing.T) {
	one := simPartitions(t, "--partitions", "1")
	if *one.Partitions != 1 || one.Chips != 1 || *one.CollectiveNs != 0 {
		t.Errorf("--partitions 1: partitions %d, chips %d, collective_ns %g; want 1, 1, 0", *one.Partitions, one.Chips, *one.CollectiveNs)
	}
	shapes := []string{}
	for _, e := range one.Kernels {
		if e.Control != "" {
			t.Errorf("--partitions 1: step %s (%s), want kernels only", e.Name, e.Control)
		}
		if e.DeviceShape != nil {
			shapes = append(shapes, *e.DeviceShape)
		}
	}
	if !slices.Contains(shapes, "bf16[512,50257]{1,0}") {
		t.Errorf("--partitions 1: no kernel has the global logits' device_shape bf16[512,50257]")
	}
	out, _, code := run("sim", tpModel, "--partitions", "1")
	if code != 0 || !strings.Contains(out, "partitioned over 1 device: the global program") {
		t.Errorf("text report (exit %d) does not say it runs the global program on one device:\n%s", code, tail(out, 3))
	}
	out, errs, code := run("sim", strings.TrimSuffix(tpModel, "_tp8"), "--json")
	var base simPartitionJSON
	if code != 0 || json.Unmarshal([]byte(out), &base) != nil || base.Partitions == nil {
		t.Fatalf("unannotated model: exit %d: %s", code, errs)
	}
	if *base.Partitions != 0 || base.Chips != 1 {
		t.Errorf("unannotated model: partitions %d, chips %d; want 0 (compiled as written), 1", *base.Partitions, base.Chips)
	}
	if math.Abs(one.TotalNs-base.TotalNs) > maxOneDeviceDiff*base.TotalNs {
		t.Errorf("--partitions 1: %g ns; the unannotated model %g ns: want within %g", one.TotalNs, base.TotalNs, maxOneDeviceDiff)
	}
}

// maxOneDeviceDiff is how far the tensor-parallel GPT-2 on one device may be from the
// unannotated model (relative). Measured 1.6% on v4 (6.09 against 6.00 ms): the
// tensor-parallel graph orders its fused QKV columns by head (Megatron-LM's layout),
// which reshapes and slices q, k and v differently.
const maxOneDeviceDiff = 0.03

// TestSimPartitionsRefused: a --partitions that the module cannot take is refused with
// one line and a non-zero exit: not an integer, negative, not dividing num_partitions,
// or any count but the header's on a module without annotations.
func TestSimPartitionsRefused(t *testing.T) {
	for _, tc := range []struct {
		src, val, want string
	}{
		{tpModel, "x", `--partitions "x": want an integer`},
		{tpModel, "-1", `--partitions "-1"`},
		{tpModel, "3", "--partitions 3: the module is annotated for num_partitions=8"},
		{tpModel, "16", "--partitions 16: the module is annotated for num_partitions=8"},
		{"gpt2_medium_s256_b2", "8", "--partitions 8: the module carries no sharding annotations"},
	} {
		out, errs, code := run("sim", tc.src, "--partitions", tc.val)
		if code == 0 || out != "" || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("sim %s --partitions %s: exit %d, stdout %q, stderr %q; want one line with %q", tc.src, tc.val, code, out, errs, tc.want)
		}
	}
}

// TestSimPartitionKeysInVocabulary: the JSON vocabulary tests (TestJSONKeyVocabulary,
// TestJSONKeyTypes) walk the keys sharded programs add to sim's report, each with its
// one type: partitions and collective_ns at the top, a kernel's device_shape, a
// collective step's collective, bytes and group_size.
func TestSimPartitionKeysInVocabulary(t *testing.T) {
	types := keyTypes(jsonOutputs())
	for _, k := range []struct{ key, typ, where string }{
		{"partitions", "number", "sim: partitions"},
		{"collective_ns", "number", "sim: collective_ns"},
		{"device_shape", "string", "sim: kernels.device_shape"},
		{"collective", "string", "sim: kernels.collective"},
		{"bytes", "number", "sim: kernels.bytes"},
		{"group_size", "number", "sim: kernels.group_size"},
	} {
		if !slices.Contains(types[k.key][k.typ], k.where) {
			t.Errorf("the vocabulary tests do not see %s as a %s (%s): they see %v", k.key, k.typ, k.where, types[k.key])
		}
		if why := vocabularyError(k.key); why != "" {
			t.Errorf("key %s: %s", k.key, why)
		}
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
