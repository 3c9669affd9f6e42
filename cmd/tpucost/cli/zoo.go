package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler/zoo"
)

// ZooListOptions are the options of `tpucost zoo list`.
type ZooListOptions struct {
	IO      IO
	Globals *Globals
	Family  string
}

// NewCmdZoo builds `tpucost zoo` and its subcommand `list`.
func NewCmdZoo(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "zoo", Short: "The model zoo"}
	opts := &ZooListOptions{IO: ios, Globals: g}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the zoo's models: name, family, kind and node count",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return runZooList(opts) },
	}
	list.Flags().StringVar(&opts.Family, "family", "", "only models of this family")
	cmd.AddCommand(list)
	return cmd
}

// ZooEntry is one model of `zoo list --json`.
type ZooEntry struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	Kind   string `json:"kind"`
	Nodes  int    `json:"nodes"`
}

func runZooList(o *ZooListOptions) error {
	var out []ZooEntry
	for _, m := range zoo.All() {
		if o.Family != "" && m.Family != o.Family {
			continue
		}
		mod, err := m.Build()
		if err != nil {
			return err
		}
		out = append(out, ZooEntry{Name: m.Name, Family: m.Family, Kind: string(m.Kind), Nodes: mod.InstructionCount()})
	}
	if o.Family != "" && len(out) == 0 {
		return fmt.Errorf("no family %q (families: %v)", o.Family, zoo.Families())
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, out)
	}
	w := table(o.IO.Out)
	fmt.Fprintln(w, "NAME\tFAMILY\tKIND\tNODES")
	for _, e := range out {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", e.Name, e.Family, e.Kind, e.Nodes)
	}
	return w.Flush()
}
