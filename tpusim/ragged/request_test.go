package ragged

import (
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// TestRequestRefusals: a ragged batch refuses the settings of a plain sim, naming the
// flag; a bad --lengths or source is an error naming --lengths.
func TestRequestRefusals(t *testing.T) {
	c := testChip(t)
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Shapes: "seq=64"}, Lengths: "32,64"}, "--lengths sizes every sequence itself: drop --shapes"},
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Config: "c.json"}, Lengths: "32,64"}, "--lengths times default compiles at every length: drop --config (a config's kernel keys hold at one length)"},
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Chips: 2}, Lengths: "32,64"}, "--lengths times one chip: drop --chips"},
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Fusion: compiler.FusionPartition}, Lengths: "32,64"}, "--lengths times default compiles at every length: --fusion partition is not supported here (drop --fusion)"},
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Staging: compiler.StagingOn}, Lengths: "32,64"}, "--lengths times default compiles at every length: --staging on is not supported here (drop --staging)"},
		{Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32"}, Lengths: "32,,64"}, "--lengths: "},
		{Request{SimRequest: tpusim.SimRequest{Src: "resnet18_b1"}, Lengths: "32,64"}, `--lengths: resnet18_b1`},
	} {
		_, err := tc.r.Time(c)
		if err == nil || len(err.Error()) < len(tc.want) || err.Error()[:len(tc.want)] != tc.want {
			t.Errorf("%+v: %v, want an error starting %q", tc.r, err, tc.want)
		}
	}
	if r, err := (Request{SimRequest: tpusim.SimRequest{Src: "bert_tiny_s128_b32", Fusion: compiler.FusionXLA}, Lengths: "32,64"}).Time(c); err != nil || len(r.Lengths) != 2 {
		t.Errorf("--fusion xla, the default: %v, want the batch timed", err)
	}
}
