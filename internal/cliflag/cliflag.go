// Package cliflag is the flag machinery of tpucost's command line (cmd/tpucost/cli):
// flag values parsed as they are set, flag parsing errors rewritten for people, and
// command groups that refuse unknown subcommands. It holds no command and no help text.
package cliflag

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Parsed is a pflag.Value whose Parse runs as the flag is set, so a bad value fails
// naming the flag: in the parser's own words (Rewrite passes them through), or, with
// Want set, as `--NAME "VALUE": want WANT`. Show formats the stored value (help's
// default); TypeName is the value's type in help (e.g. "shapes", "rule", "mode").
type Parsed[T any] struct {
	P        *T
	Parse    func(string) (T, error)
	Show     func(T) string
	TypeName string
	// Want, if set, is what the flag wants (e.g. "one of off, on, auto"), said in place
	// of the parser's words.
	Want string
}

// CheckedString is a Parsed value holding the string as given, once check accepts it.
func CheckedString(p *string, typ string, check func(string) error) pflag.Value {
	return Parsed[string]{P: p, TypeName: typ, Show: func(s string) string { return s },
		Parse: func(s string) (string, error) { return s, check(s) }}
}

// String is the stored value as Show formats it ("" without one).
func (v Parsed[T]) String() string {
	if v.P == nil || v.Show == nil {
		return ""
	}
	return v.Show(*v.P)
}

// Set parses s and stores it; the parser's error is returned as it is.
func (v Parsed[T]) Set(s string) error {
	x, err := v.Parse(s)
	if err != nil {
		return err
	}
	*v.P = x
	return nil
}

// Type is the value's name in help.
func (v Parsed[T]) Type() string { return v.TypeName }

// wanted says what the value wants, when Want is set (Rewrite).
func (v Parsed[T]) wanted() string { return v.Want }

// pflagInvalid matches pflag's error for a flag value that does not parse:
// `invalid argument "abc" for "-e, --epochs" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var pflagInvalid = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-[^,]+, )?--([^"]+)" flag: (.*)$`)

// Rewrite is a cobra flag error function: it rewrites a flag parsing error for people,
// the flag, the value and what it wants, never Go's parser names (strconv.ParseInt). A
// Parsed value's error is its parser's words (or its Want); other errors pass through.
func Rewrite(cmd *cobra.Command, err error) error {
	m := pflagInvalid.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	want := "a valid value"
	if f := cmd.Flags().Lookup(name); f != nil {
		if p, ok := f.Value.(interface{ wanted() string }); ok {
			if w := p.wanted(); w != "" {
				return fmt.Errorf("--%s %q: want %s", name, value, w)
			}
			return fmt.Errorf("--%s: %s", name, why) // the parser says what it wants
		}
		switch t := f.Value.Type(); {
		case strings.HasPrefix(t, "int"):
			want = "an integer"
		case strings.HasPrefix(t, "uint"):
			want = "a non-negative integer"
		case strings.HasPrefix(t, "float"):
			want = "a number"
		case t == "bool":
			want = "true or false"
		case t == "duration":
			want = "a duration such as 30s or 5m"
		}
	}
	if strings.Contains(why, "value out of range") {
		return fmt.Errorf("--%s %s: out of range: want %s that fits in 64 bits", name, value, want)
	}
	return fmt.Errorf("--%s %q: want %s", name, value, want)
}

// RequireKnownSubcommands makes every command of the tree under cmd that only groups
// subcommands (import, export, gym, zoo, ...) refuse an argument that names none of
// them, with a non-zero exit naming it (cobra prints the group's help and exits 0
// otherwise); without arguments it prints its help. The root itself is left as it is.
func RequireKnownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		RequireKnownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() || !cmd.HasParent() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		var names []string
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				names = append(names, s.Name())
			}
		}
		return fmt.Errorf("unknown command %q for %q (commands: %s)", args[0], c.CommandPath(), strings.Join(names, ", "))
	}
}
