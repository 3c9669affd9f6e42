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

// Invalid is the one error of a flag given a value it does not take, in the one style
// of every flag error of tpucost: `--NAME "VALUE": WHY`, WHY saying what the flag wants
// in words (e.g. "want an integer", "want one of off, on, auto"). name is the flag's
// name without dashes; value is as given. (The command line prints it after the command,
// "tpucost CMD: --NAME "VALUE": WHY".)
func Invalid(name, value, why string) error {
	return &ValueError{Flag: name, Value: value, Why: why}
}

// ValueError is a flag value refused (Invalid): the flag's name without dashes, the value
// as given and, in words, what the flag wants.
type ValueError struct {
	Flag, Value, Why string
}

func (e *ValueError) Error() string { return fmt.Sprintf("--%s %q: %s", e.Flag, e.Value, e.Why) }

// Rewrite is a cobra flag error function: it rewrites a flag parsing error for people
// (Invalid), the flag, the value and what it wants, never Go's parser names
// (strconv.ParseInt). A Parsed value's error is its parser's words (or its Want); other
// errors (an unknown flag, a missing value) pass through.
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
				return Invalid(name, value, "want "+w)
			}
			// The parser says what it wants; it may start by quoting the value again.
			why = strings.TrimPrefix(why, fmt.Sprintf("%q: ", value))
			return Invalid(name, value, why)
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
		return Invalid(name, value, "want "+want+" that fits in 64 bits")
	}
	return Invalid(name, value, "want "+want)
}

// OneArg is the cobra.PositionalArgs of a command that takes exactly one argument, what
// says which in words (e.g. "one HLO file or zoo model name"): a missing or an extra
// argument fails saying what is expected and how the command is used, never cobra's
// "accepts 1 arg(s), received 0".
func OneArg(what string) cobra.PositionalArgs { return argCount(1, 1, what) }

// AtLeastOneArg is OneArg for a command that takes one or more arguments.
func AtLeastOneArg(what string) cobra.PositionalArgs { return argCount(1, -1, what) }

// AtMostOneArg is OneArg for a command whose one argument is optional.
func AtMostOneArg(what string) cobra.PositionalArgs { return argCount(0, 1, what) }

// argCount accepts between lo and hi arguments (hi < 0: no upper bound).
func argCount(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && (hi < 0 || len(args) <= hi) {
			return nil
		}
		got := "none"
		if len(args) > 0 {
			got = fmt.Sprintf("%d arguments (%s)", len(args), strings.Join(args, ", "))
		}
		return fmt.Errorf("expected %s, got %s; usage: %s", what, got, cmd.UseLine())
	}
}

// RequireKnownSubcommands makes every command of the tree under cmd that only groups
// subcommands (import, export, gym, zoo, ...) refuse an argument that names none of
// them, with a non-zero exit naming it (cobra prints the group's help and exits 0
// otherwise); without arguments it prints its help. The root itself is left as it is.
//
// On the root, it first adds cobra's default help and completion commands (cobra adds
// them only as it executes), so that `completion NOSHELL` is refused like any group's
// unknown subcommand and `help NOTOPIC` fails naming the topic (cobra prints the usage
// and exits 0).
func RequireKnownSubcommands(cmd *cobra.Command) {
	if !cmd.HasParent() && cmd.HasSubCommands() {
		cmd.InitDefaultHelpCmd()
		cmd.InitDefaultCompletionCmd()
		for _, c := range cmd.Commands() {
			if c.Name() == "help" {
				requireKnownTopics(c)
			}
		}
	}
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

// requireKnownTopics makes the help command help fail on a topic that names no command,
// listing the commands.
func requireKnownTopics(help *cobra.Command) {
	help.Run = nil
	help.RunE = func(c *cobra.Command, args []string) error {
		target, rest, err := c.Root().Find(args)
		if err != nil || target == nil || len(rest) > 0 {
			var names []string
			for _, s := range c.Root().Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			return fmt.Errorf("unknown help topic %q (commands: %s)", strings.Join(args, " "), strings.Join(names, ", "))
		}
		target.InitDefaultHelpFlag()
		target.InitDefaultVersionFlag()
		return target.Help()
	}
}
