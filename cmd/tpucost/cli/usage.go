package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
)

// pflagInvalid matches pflag's error for a flag value that does not parse:
// `invalid argument "abc" for "-e, --epochs" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var pflagInvalid = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-[^,]+, )?--([^"]+)" flag: (.*)$`)

// flagError rewrites a flag parsing error for people: the flag, the value and what it
// wants, never Go's parser names (strconv.ParseInt). Other errors pass through.
func flagError(cmd *cobra.Command, err error) error {
	m := pflagInvalid.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, name, why := m[1], m[2], m[3]
	want := "a valid value"
	if f := cmd.Flags().Lookup(name); f != nil && (f.Value.Type() == "shapes" || f.Value.Type() == "rule" || f.Value.Type() == "lengths") {
		return fmt.Errorf("--%s: %s", name, why) // zoo.ParseShapes, compiler.ParseFusionRule, ragged.ParseLengths say what they want
	}
	if f := cmd.Flags().Lookup(name); f != nil {
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
		case t == "mode" && name == "staging":
			want = "one of " + strings.Join(compiler.StagingModes(), ", ")
		}
	}
	if strings.Contains(why, "value out of range") {
		return fmt.Errorf("--%s %s: out of range: want %s that fits in 64 bits", name, value, want)
	}
	return fmt.Errorf("--%s %q: want %s", name, value, want)
}

// requireKnownSubcommands makes every command of the tree that only groups subcommands
// (import, export, gym, zoo, ...) refuse an argument that names none of them, with a
// non-zero exit naming it (cobra prints the group's help and exits 0 otherwise); without
// arguments it prints its help.
func requireKnownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireKnownSubcommands(c)
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
