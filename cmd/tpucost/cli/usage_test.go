package cli

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
)

// TestUnknownSubcommandFails: an unknown subcommand of a command group exits non-zero
// naming it (it printed the group's help and exited 0).
func TestUnknownSubcommandFails(t *testing.T) {
	for _, args := range [][]string{{"import", "nosuch", "x"}, {"export", "nosuch"}, {"gym", "nosuch"}, {"zoo", "nosuch"}, {"nosuch"}} {
		out, errs, code := run(args...)
		if code == 0 || !strings.Contains(errs, `unknown command "nosuch"`) || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want a non-zero exit naming the command", strings.Join(args, " "), code, out, errs)
		}
	}
	if _, errs, code := run("gym"); code != 0 || errs != "" {
		t.Errorf("gym alone: exit %d, stderr %q; want its help", code, errs)
	}
}

// TestFlagValueErrors: a flag value that does not parse is named with what the flag
// wants, never with Go's parser (strconv.ParseInt: parsing "abc").
func TestFlagValueErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--epochs", "abc"}, `--epochs "abc": want an integer`},
		{[]string{"tune", "mlp_96x2_b1", "--noise", "x"}, `--noise "x": want a number`},
		{[]string{"compile", "mlp_96x2_b1", "--check=maybe"}, `--check "maybe": want true or false`},
		{[]string{"gen", "--seed", "99999999999999999999"}, `--seed "99999999999999999999": want an integer that fits in 64 bits`},
	} {
		_, errs, code := run(tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) || strings.Contains(errs, "strconv") || strings.Contains(errs, "invalid syntax") {
			t.Errorf("%s: exit %d, stderr %q; want %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
}

// TestVersion: --version names the build and the versions data and models depend on.
func TestVersion(t *testing.T) {
	out, errs, code := run("--version")
	if code != 0 || !strings.HasPrefix(out, "tpucost ") || !strings.Contains(out, tpusim.Version) || !strings.Contains(out, "feature schema") ||
		!strings.Contains(out, "commit") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
