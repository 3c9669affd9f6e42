package cli

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/tune"
)

func names[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// TestFlagListsNameRegistries: the help text of every flag that takes a registered name
// (tune --strategy and --kinds, tune train-policy --kinds, train --loss and --task, gen
// --task), and the error a bad value of it gets, name every registered value (tune.Methods,
// compiler.Kinds, tune.RLKinds, gnn.Losses, dataset.Tasks). Before the registries, the
// refusal of --kinds omitted staging, typed by hand beside compiler.Kinds.
func TestFlagListsNameRegistries(t *testing.T) {
	tmp := t.TempDir()
	cases := []struct {
		cmd    string // command path below the root
		flag   string
		values []string
		bad    []string // a command line with a bad value of the flag
	}{
		{"tune", "strategy", names(tune.Strategies()), []string{"tune", "mlp_96x2_b1", "--strategy", "nope"}},
		{"tune", "kinds", names(compiler.Kinds()), []string{"tune", "mlp_96x2_b1", "--strategy", "random", "--kinds", "layout,nope"}},
		{"tune train-policy", "kinds", names(tune.RLKinds()), []string{"tune", "train-policy", "--programs", "mlp_96x2_b1", "--kinds", "tile", "--out", tmp + "/policy"}},
		{"train", "loss", names(gnn.Losses()), []string{"train", "--task", "tile", "--data", tmp + "/none", "--out", tmp + "/m", "--loss", "nope"}},
		{"train", "task", names(dataset.Tasks()), []string{"train", "--task", "nope", "--data", tmp + "/none", "--out", tmp + "/m"}},
		{"gen", "task", names(dataset.Tasks()), []string{"gen", "--task", "nope", "--models", "mlp_96x2_b1", "--out", tmp + "/d"}},
	}
	root := NewRootCmd(IO{})
	for _, c := range cases {
		cmd, _, err := root.Find(strings.Fields(c.cmd))
		if err != nil {
			t.Fatalf("%s: %v", c.cmd, err)
		}
		f := cmd.Flags().Lookup(c.flag)
		if f == nil {
			t.Fatalf("%s has no --%s", c.cmd, c.flag)
		}
		_, stderr, code := run(c.bad...)
		if code == 0 {
			t.Errorf("%s: exit 0, want a refusal", strings.Join(c.bad, " "))
		}
		for _, v := range c.values {
			if !strings.Contains(f.Usage, v) {
				t.Errorf("%s --%s help does not name %s: %q", c.cmd, c.flag, v, f.Usage)
			}
			if !strings.Contains(stderr, v) {
				t.Errorf("%s: the error does not name %s: %q", strings.Join(c.bad, " "), v, stderr)
			}
		}
	}
}
