package cli

import (
	"fmt"
	"strings"

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
		Short: "List the zoo's models: name, family, kind, node count and dynamic dimensions (--shapes)",
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
	// Dynamic names the model's dynamic dimensions (["seq"]; --shapes seq=V sizes it),
	// DynamicMax their largest values; both absent for a static model.
	Dynamic    []string       `json:"dynamic,omitempty"`
	DynamicMax map[string]int `json:"dynamic_max,omitempty"`
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
		e := ZooEntry{Name: m.Name, Family: m.Family, Kind: string(m.Kind), Nodes: mod.InstructionCount()}
		for _, d := range m.Dynamic {
			if e.DynamicMax == nil {
				e.DynamicMax = map[string]int{}
			}
			e.Dynamic = append(e.Dynamic, d.Name)
			e.DynamicMax[d.Name] = d.Max
		}
		out = append(out, e)
	}
	if o.Family != "" && len(out) == 0 {
		return fmt.Errorf("no family %q (families: %v)", o.Family, zoo.Families())
	}
	if o.Globals.JSON {
		return writeJSON(o.IO.Out, out)
	}
	w := table(o.IO.Out)
	fmt.Fprintln(w, "NAME\tFAMILY\tKIND\tNODES\tDYNAMIC")
	for _, e := range out {
		dyn := "-"
		if len(e.Dynamic) > 0 {
			var ds []string
			for _, d := range e.Dynamic {
				ds = append(ds, fmt.Sprintf("%s<=%d", d, e.DynamicMax[d]))
			}
			dyn = strings.Join(ds, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", e.Name, e.Family, e.Kind, e.Nodes, dyn)
	}
	return w.Flush()
}
