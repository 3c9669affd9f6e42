package rl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/sealedckpt"
)

var (
	errMismatch = errors.New("policy mismatch")
	errCorrupt  = errors.New("policy corrupt")
)

// polFile is a policy file as an owner declares it.
type polFile struct {
	Format   string   `json:"format"`
	Checksum string   `json:"checksum"`
	Actions  []string `json:"actions,omitempty"`
	nn.Saved
}

// codec is a codec of file file (AgentFile or PolicyFile) with actions.
func codec(file string, actions ...string) Codec {
	return Codec{Kind: sealedckpt.Kind{What: "policy", File: file, Prefix: "test-policy/", Version: 1, Retrain: "train it",
		Mismatch: errMismatch, Corrupt: errCorrupt}, Actions: actions, ListName: "action list"}
}

func save(t *testing.T, c Codec, dir string, actions []string) nn.Params {
	t.Helper()
	ps := nn.Params{nn.NewParam("w", 2, 2)}
	ps[0].Data[3] = 0.5
	if err := c.Save(dir, &polFile{Format: c.Format(), Actions: actions, Saved: nn.Save(ps)}); err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestCodecAcrossKinds: a checkpoint saved by one policy kind (the gym's agent file)
// loads through the other kind's codec (tune's policy file) where the action lists agree,
// with its values; where they differ it is refused with a one-line Mismatch error that
// names both lists, in both directions.
func TestCodecAcrossKinds(t *testing.T) {
	passes := []string{"dce", "cse", "simplify", "stop"}
	decisions := []string{"layout", "fusion"}
	for _, tc := range []struct {
		name       string
		from, into Codec
		load       bool
	}{
		{"agent file into policy codec, same actions", codec(AgentFile, decisions...), codec(PolicyFile, decisions...), true},
		{"policy file into agent codec, same actions", codec(PolicyFile, passes...), codec(AgentFile, passes...), true},
		{"agent into policy", codec(AgentFile, passes...), codec(PolicyFile, decisions...), false},
		{"policy into agent", codec(PolicyFile, decisions...), codec(AgentFile, passes...), false},
	} {
		dir := t.TempDir()
		ps := save(t, tc.from, dir, tc.from.Actions)
		var f polFile
		path, err := tc.into.Load(dir, &f)
		if tc.load {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			back := nn.Params{nn.NewParam("w", 2, 2)}
			if err := tc.into.Restore(path, f.Saved, back); err != nil || !slices.Equal(back[0].Data, ps[0].Data) {
				t.Errorf("%s: restored %v (%v), want %v", tc.name, back[0].Data, err, ps[0].Data)
			}
			continue
		}
		if !errors.Is(err, errMismatch) || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), describe(tc.from.Actions)) || !strings.Contains(err.Error(), describe(tc.into.Actions)) {
			t.Errorf("%s: %v; want a one-line mismatch naming both action lists", tc.name, err)
		}
	}
}

// TestCodecActions: a checkpoint of this kind trained on another action list is refused
// naming the first difference; one without a list is refused unless the codec has an
// implicit list for it; Save refuses a file whose actions are not the codec's.
func TestCodecActions(t *testing.T) {
	c := codec(PolicyFile, "layout", "fusion")
	dir := t.TempDir()
	save(t, codec(PolicyFile, "fusion", "layout"), dir, []string{"fusion", "layout"})
	var f polFile
	if _, err := c.Load(dir, &f); !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), `action 0 is "fusion" there, "layout" here`) {
		t.Errorf("reordered actions: %v", err)
	}
	// An earlier build's file: written without the codec's action check.
	if err := c.Kind.Save(dir, &polFile{Format: c.Format(), Saved: nn.Save(nn.Params{nn.NewParam("w", 2, 2)})}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(dir, &f); !errors.Is(err, errMismatch) || !strings.Contains(err.Error(), "records no action list") {
		t.Errorf("no recorded actions: %v", err)
	}
	c.Implicit = c.Actions
	if _, err := c.Load(dir, &f); err != nil {
		t.Errorf("no recorded actions, implicit list: %v", err)
	}
	if err := c.Save(dir, &polFile{Format: c.Format(), Actions: []string{"layout"}}); err == nil {
		t.Error("saving a file with another action list: no error")
	}
	if err := os.Remove(filepath.Join(dir, PolicyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Load(dir, &f); err == nil {
		t.Error("an empty directory: no error")
	}
}
