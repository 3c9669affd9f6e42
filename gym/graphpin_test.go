package gym

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tpucost/tpucost/zoo"
)

// TestBuildGraphPinned pins the gym's graphs (features.DataflowEdges, the gym's node
// features) on real modules byte for byte: the digests were recorded from the gym's own
// builder before the module graph moved to package features, and the two were compared
// equal on every zoo model, the bundled programs and the real HLO of the test data. A
// change here changes every observation an agent was trained on.
func TestBuildGraphPinned(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"mlp_768x3_b8", "ae298e0ab37433082fbdcb2e27c495239df05c9cf336ce485ec2798082af2c72"},
		{"../compiler/hlo/testdata/real/bench_scan_N2000_M3.hlo", "1afedaf250b57d46220ebf92f4b30b03e52a52bf5d6f9e94048cc74011e10f70"},
		{"../compiler/hlo/testdata/real/llama3_8b_bf16_activation_offloading_1x8.hlo", "62fbd91389d9519958e5fdfd269151eebf97c19160537903aa3ab4c3ae7128a0"},
	} {
		m, err := zoo.Resolve(c.src)
		if err != nil {
			t.Fatal(err)
		}
		g, err := BuildGraph(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(g)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != c.want {
			t.Errorf("%s: graph digest %s, want %s", c.src, got, c.want)
		}
	}
}
