package cli

import (
	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/zoo"
)

// ZooListOptions are the options of `tpucost zoo list`.
type ZooListOptions struct {
	cmdIO
	Family string
}

// NewCmdZoo builds `tpucost zoo` and its subcommand `list`.
func NewCmdZoo(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "zoo", Short: "The model zoo"}
	opts := &ZooListOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
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

func runZooList(o *ZooListOptions) error {
	return o.printResult(zoo.List(o.Family))
}
