package cliflag

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// parseErr parses args on a command with one flag of each kind Rewrite knows and returns
// the rewritten error.
func parseErr(args ...string) error {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	f := cmd.Flags()
	f.Int("epochs", 1, "")
	f.Uint("count", 1, "")
	f.Float64("lr", 0.1, "")
	f.Bool("check", false, "")
	f.Duration("wait", time.Second, "")
	f.String("name", "", "")
	var s string
	f.Var(CheckedString(&s, "shapes", func(v string) error {
		if v == "ok" {
			return nil
		}
		return errors.New("want NAME=V")
	}), "shapes", "")
	var n int
	f.Var(Parsed[int]{P: &n, Parse: strconv.Atoi, Show: strconv.Itoa, TypeName: "mode", Want: "one of 1, 2"}, "mode", "")
	cmd.SetFlagErrorFunc(Rewrite)
	cmd.SetArgs(args)
	return cmd.Execute()
}

// TestRewrite: a value that does not parse is named with its flag and what the flag
// wants in the one style (Invalid), never Go's parser names; a Parsed value's parser
// speaks for itself unless it has a Want; other errors pass through.
func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--epochs", "abc"}, `--epochs "abc": want an integer`},
		{[]string{"--epochs", "99999999999999999999"}, `--epochs "99999999999999999999": want an integer that fits in 64 bits`},
		{[]string{"--count", "-1"}, `--count "-1": want a non-negative integer`},
		{[]string{"--lr", "x"}, `--lr "x": want a number`},
		{[]string{"--check=maybe"}, `--check "maybe": want true or false`},
		{[]string{"--wait", "soon"}, `--wait "soon": want a duration such as 30s or 5m`},
		{[]string{"--shapes", "bad"}, `--shapes "bad": want NAME=V`},
		{[]string{"--mode", "x"}, `--mode "x": want one of 1, 2`},
		{[]string{"--nosuch"}, "unknown flag: --nosuch"},
	} {
		err := parseErr(tc.args...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if err := parseErr("--shapes", "ok", "--mode", "2"); err != nil {
		t.Errorf("valid values: %v", err)
	}
}

// TestParsed: Set stores the parsed value only when it parses; String shows it.
func TestParsed(t *testing.T) {
	n := 7
	v := Parsed[int]{P: &n, Parse: strconv.Atoi, Show: strconv.Itoa, TypeName: "num"}
	if err := v.Set("x"); err == nil || n != 7 {
		t.Errorf("bad value: %v, stored %d", err, n)
	}
	if err := v.Set("3"); err != nil || n != 3 || v.String() != "3" || v.Type() != "num" {
		t.Errorf("good value: %v, stored %d, shown %q, type %q", err, n, v.String(), v.Type())
	}
	if (Parsed[int]{}).String() != "" {
		t.Error("an unbound value shows something")
	}
}

// TestRequireKnownSubcommands: a group refuses an unknown subcommand naming it and the
// available ones, prints its help without arguments, and leaves the root alone.
func TestRequireKnownSubcommands(t *testing.T) {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	group := &cobra.Command{Use: "group", Short: "a group"}
	group.AddCommand(&cobra.Command{Use: "a", Run: func(*cobra.Command, []string) {}}, &cobra.Command{Use: "b", Run: func(*cobra.Command, []string) {}})
	root.AddCommand(group)
	RequireKnownSubcommands(root)
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"group", "nosuch"})
	err := root.Execute()
	want := fmt.Sprintf("unknown command %q for %q (commands: a, b)", "nosuch", "tool group")
	if err == nil || err.Error() != want {
		t.Errorf("unknown subcommand: %v, want %q", err, want)
	}
	out.Reset()
	root.SetArgs([]string{"group"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "a group") {
		t.Errorf("group alone: %v, output %q; want its help", err, out.String())
	}
	if root.RunE != nil || root.Args != nil {
		t.Error("the root was changed")
	}
}

// TestInvalid: the one flag-error style, `--NAME "VALUE": WHY`, a *ValueError.
func TestInvalid(t *testing.T) {
	err := Invalid("chip", "v9", "want one of v2, v3")
	var ve *ValueError
	if err.Error() != `--chip "v9": want one of v2, v3` || !errors.As(err, &ve) || ve.Flag != "chip" || ve.Value != "v9" {
		t.Errorf("Invalid: %v", err)
	}
	if got := Invalid("shapes", "", "empty").Error(); got != `--shapes "": empty` {
		t.Errorf("empty value: %q", got)
	}
}

// TestArgCounts: a missing or extra argument says what the command expects and how it
// is used, never cobra's "accepts 1 arg(s), received 0".
func TestArgCounts(t *testing.T) {
	cmd := &cobra.Command{Use: "sim SRC"}
	for _, tc := range []struct {
		args cobra.PositionalArgs
		n    int
		want string
	}{
		{OneArg("one model (SRC)"), 0, "expected one model (SRC), got none; usage: sim SRC"},
		{OneArg("one model (SRC)"), 2, "expected one model (SRC), got 2 arguments (a0, a1); usage: sim SRC"},
		{OneArg("x"), 1, ""},
		{AtLeastOneArg("files"), 0, "expected files, got none; usage: sim SRC"},
		{AtLeastOneArg("files"), 3, ""},
		{AtMostOneArg("a model"), 0, ""},
		{AtMostOneArg("a model"), 2, "expected a model, got 2 arguments (a0, a1); usage: sim SRC"},
	} {
		var args []string
		for i := range tc.n {
			args = append(args, fmt.Sprintf("a%d", i))
		}
		err := tc.args(cmd, args)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%d args: %v, want %q", tc.n, err, tc.want)
		}
	}
}

// TestUnknownHelpTopicAndShell: on a root, help of an unknown topic and completion for
// an unknown shell fail naming them; help of a known command prints its help.
func TestUnknownHelpTopicAndShell(t *testing.T) {
	root := &cobra.Command{Use: "tool", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(&cobra.Command{Use: "a", Short: "the a command", Run: func(*cobra.Command, []string) {}})
	RequireKnownSubcommands(root)
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nope"}, `unknown help topic "nope" (commands: a, completion)`},
		{[]string{"help", "a", "b"}, `unknown help topic "a b"`},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "tool completion" (commands: bash, fish, powershell, zsh)`},
	} {
		root.SetArgs(tc.args)
		if err := root.Execute(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	out.Reset()
	root.SetArgs([]string{"help", "a"})
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "the a command") {
		t.Errorf("help a: %v, output %q", err, out.String())
	}
}
