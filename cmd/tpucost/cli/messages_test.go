package cli

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Messages for people (issue 31): no Go-internal text reaches a user.

// flagErrorStyle is the one style of a refused flag value, as printed:
// `tpucost CMD: --FLAG "VALUE": what the flag wants`, one line.
var flagErrorStyle = regexp.MustCompile(`^tpucost [a-z][a-z -]*: --[a-z0-9-]+ "[^"\n]*": \S[^\n]*\n$`)

// goInternals are fragments of Go's own error text that must not reach a user.
var goInternals = []string{"strconv.", "invalid syntax", "context canceled", "got ", "%!", "proto:", "accepts 1 arg"}

// checkFlagError fails unless errs is one line in the one flag-error style.
func checkFlagError(t *testing.T, args []string, code int, errs string) {
	t.Helper()
	if code == 0 || !flagErrorStyle.MatchString(errs) {
		t.Errorf("tpucost %s: exit %d, stderr %q; want one line `tpucost CMD: --FLAG \"VALUE\": WANT`", strings.Join(args, " "), code, errs)
	}
	for _, s := range goInternals {
		if strings.Contains(errs, s) {
			t.Errorf("tpucost %s: stderr %q holds %q", strings.Join(args, " "), errs, s)
		}
	}
}

// walkCommands calls f with every command of the tree under cmd that runs.
func walkCommands(cmd *cobra.Command, f func(*cobra.Command)) {
	if cmd.Runnable() {
		f(cmd)
	}
	for _, c := range cmd.Commands() {
		walkCommands(c, f)
	}
}

// commandArgs is the path of c as arguments ("gym", "train").
func commandArgs(c *cobra.Command) []string {
	return strings.Fields(strings.TrimPrefix(c.CommandPath(), "tpucost"))
}

// TestFlagErrorStyleEveryCommand walks every command's flags: a number, a bool or a
// duration given a value that does not parse is refused in the one style.
func TestFlagErrorStyleEveryCommand(t *testing.T) {
	bad := map[string]string{"int": "x", "int64": "x", "int32": "x", "uint": "-1", "uint64": "-1", "float64": "x", "float32": "x", "bool": "maybe", "duration": "soon"}
	n := 0
	walkCommands(NewRootCmd(IO{}), func(c *cobra.Command) {
		seen := map[string]bool{}
		visit := func(f *pflag.Flag) {
			v, ok := bad[f.Value.Type()]
			if !ok || seen[f.Name] || f.Name == "help" || f.Name == "version" {
				return
			}
			seen[f.Name] = true
			args := append(commandArgs(c), "--"+f.Name+"="+v)
			_, errs, code := run(args...)
			checkFlagError(t, args, code, errs)
			n++
		}
		c.LocalFlags().VisitAll(visit)
		c.InheritedFlags().VisitAll(visit)
	})
	if n < 50 {
		t.Errorf("walked %d flags; the walk missed commands", n)
	}
}

// TestFlagErrorStyleSample: a sample of every kind of refused value (parsed as the flag
// is set, or checked by the command's library) across the commands, in the one style.
func TestFlagErrorStyleSample(t *testing.T) {
	for _, args := range [][]string{
		{"sim", "mlp_96x2_b1", "--chip", "v9"},
		{"sim", "mlp_96x2_b1", "--vmem", "0"},
		{"sim", "mlp_96x2_b1", "--chips", "-1"},
		{"sim", "mlp_96x2_b1", "--shapes", "bad"},
		{"sim", "mlp_96x2_b1", "--lengths", "3,x"},
		{"sim", "mlp_96x2_b1", "--fusion", "x"},
		{"compile", "mlp_96x2_b1", "--staging", "x"},
		{"compile", "mlp_96x2_b1", "--passes", "nope"},
		{"compile", "mlp_96x2_b1", "--dump-after", "nope"},
		{"tune", "mlp_96x2_b1", "--strategy", "nope"},
		{"tune", "mlp_96x2_b1", "--topk", "0"},
		{"tune", "mlp_96x2_b1", "--kinds", "bogus"},
		{"tune", "mlp_96x2_b1", "--seed", "99999999999999999999"},
		{"gen", "--task", "nope", "--all", "--out", t.TempDir()},
		{"gen", "--task", "tile", "--all", "--shard", "3/2", "--out", t.TempDir()},
		{"train", "--task", "tile", "--data", "d", "--out", "o", "--loss", "x"},
		{"train", "--task", "tile", "--data", "d", "--out", "o", "--epochs", "-1"},
		{"eval", "--model", "m", "--data", "d", "--split", "q"},
		{"predict", "mlp_96x2_b1", "--model", "m", "--top", "-1"},
		{"gym", "train", "--agent", t.TempDir(), "--iterations", "0"},
		{"export", "tpugraphs", "d", "--out", "o", "--split", "q"},
		{"import", "tpugraphs", "x.npz", "--out", "o", "--format", "csv"},
	} {
		_, errs, code := run(args...)
		checkFlagError(t, args, code, errs)
	}
}

// TestHelpValueNames: every flag's value name in help is a placeholder (FILE, DIR) or its
// type, never a word of its usage (pflag takes the first backquoted word: help showed
// "--chip-file tpucost calibrate").
func TestHelpValueNames(t *testing.T) {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	walkCommands(NewRootCmd(IO{}), func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			plain := *f
			plain.Usage = strings.ReplaceAll(f.Usage, "`", "")
			typeName, _ := pflag.UnquoteUsage(&plain)
			if name != typeName && !placeholder.MatchString(name) {
				t.Errorf("%s --%s: value name %q in help; want an upper-case placeholder or %q", c.CommandPath(), f.Name, name, typeName)
			}
		})
	})
	for _, tc := range []struct{ args []string }{{[]string{"calibrate", "--help"}}, {[]string{"tune", "--help"}}} {
		out, _, _ := run(tc.args...)
		for _, want := range []string{"--chip-file FILE"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q", tc.args, want)
			}
		}
	}
	if out, _, _ := run("tune", "--help"); !strings.Contains(out, "--policy DIR") {
		t.Error("tune --help lacks --policy DIR")
	}
}

// TestUnknownNamesFail: an unknown help topic or completion shell exits non-zero with one
// line naming it (cobra printed usage and exited 0).
func TestUnknownNamesFail(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nonexist"}, `tpucost help: unknown help topic "nonexist" (commands: `},
		{[]string{"help", "zoo", "nonexist"}, `unknown help topic "zoo nonexist"`},
		{[]string{"completion", "tcsh"}, `tpucost completion: unknown command "tcsh" for "tpucost completion" (commands: bash, fish, powershell, zsh)`},
	} {
		out, errs, code := run(tc.args...)
		if code == 0 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want one line with %q", tc.args, code, out, errs, tc.want)
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "sim"}, {"help", "gym", "train"}, {"completion", "bash"}} {
		if out, errs, code := run(args...); code != 0 || out == "" {
			t.Errorf("%v: exit %d, stderr %q; want its output", args, code, errs)
		}
	}
}

// TestArgumentsSayWhatIsExpected: a missing or extra argument says what the command
// expects and how it is used, not cobra's "accepts 1 arg(s), received 0".
func TestArgumentsSayWhatIsExpected(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim"}, "tpucost sim: expected one HLO file or zoo model name (SRC), got none; usage: tpucost sim SRC [flags]"},
		{[]string{"compile", "a", "b"}, "tpucost compile: expected one HLO file or zoo model name (SRC), got 2 arguments (a, b); usage: tpucost compile SRC [flags]"},
		{[]string{"inspect"}, "tpucost inspect: expected one dataset directory (DIR), got none"},
		{[]string{"validate"}, "tpucost validate: expected one or more TpuGraphs tuning files (FILE.pb), got none"},
		{[]string{"import", "tpugraphs", "--out", "x"}, "tpucost import tpugraphs: expected one or more"},
		{[]string{"tune", "a", "b"}, "tpucost tune: expected at most one HLO file or zoo model name (SRC), got 2 arguments (a, b)"},
	} {
		_, errs, code := run(tc.args...)
		if code == 0 || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "arg(s)") {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestUnknownModelSuggestsClose: an unknown zoo model suggests only close names, by edit
// distance ("nope" is close to none; it suggested resnet18_b1).
func TestUnknownModelSuggestsClose(t *testing.T) {
	_, errs, code := run("sim", "nope")
	if code == 0 || strings.Contains(errs, "close:") || !strings.Contains(errs, "zoo list") {
		t.Errorf("sim nope: exit %d, stderr %q; want no suggestion", code, errs)
	}
	_, errs, code = run("sim", "resnet18_b2")
	if code == 0 || !strings.Contains(errs, "(close: resnet18_b1, ") {
		t.Errorf("sim resnet18_b2: exit %d, stderr %q; want resnet18_b1 first", code, errs)
	}
}

// TestInterruptedSaysSo: a command stopped by a signal (its context cancelled) says it
// was interrupted, never Go's "context canceled", and exits ExitInterrupted.
func TestInterruptedSaysSo(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"context canceled", "tpucost tune: interrupted"},
		{"tune: measuring: context canceled", "tpucost tune: measuring: interrupted"},
		{"train: interrupted in epoch 3: context canceled", "tpucost tune: train: interrupted in epoch 3"}, {"tune: stopped: context canceled", "tpucost tune: stopped: interrupted"},
		{"train: interrupted in epoch 65 (context canceled): m holds epoch 64", "tpucost tune: train: interrupted in epoch 65: m holds epoch 64"},
		{"gen: unit 4: context canceled; kept 3 shards", "tpucost tune: gen: unit 4; kept 3 shards: interrupted"},
	} {
		root := NewRootCmd(IO{})
		tune, _, _ := root.Find([]string{"tune"})
		if got := errorLine(tune, errors.New(tc.err), true); got != tc.want {
			t.Errorf("errorLine(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
	// A run under a cancelled context, end to end.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	code := MainContext(ctx, []string{"tune", "mlp_96x2_b1", "--budget", "20"}, strings.NewReader(""), &out, &errb)
	if code != ExitInterrupted || strings.Contains(errb.String(), "context canceled") || !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("tune under a cancelled context: exit %d, stderr %q", code, errb.String())
	}
}
