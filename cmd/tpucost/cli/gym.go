package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/gym"
)

// NewCmdGym builds `tpucost gym` and its subcommands.
func NewCmdGym(ios IO, g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gym",
		Short: "Pass-ordering environment (JSON lines on stdio) and its agents",
		Long: "The gym lets an agent choose the order of the target-independent HLO passes: each step runs one pass (or stops); " +
			"the reward is the op-count reduction divided by the program's initial op count.",
	}
	cmd.AddCommand(NewCmdGymServe(ios, g))
	return cmd
}

// GymServeOptions are the options of `tpucost gym serve`.
type GymServeOptions struct {
	IO       IO
	Programs string
	Verify   bool
}

// NewCmdGymServe builds `tpucost gym serve`.
func NewCmdGymServe(ios IO, _ *Globals) *cobra.Command {
	o := &GymServeOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the pass-ordering environment as line-delimited JSON on stdin/stdout",
		Long: "Serve reads one JSON request per line on stdin ({\"op\":\"actions\"}, {\"op\":\"reset\",\"program\":P,\"seed\":S,\"max_steps\":N}, " +
			"{\"op\":\"step\",\"action\":A}) and writes one JSON response per line on stdout (observation, reward, done, info; " +
			"or ok=false with an error naming the line). It ends at EOF. See the README's Pass-ordering gym section.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			programs, err := gymPrograms(o.Programs, false)
			if err != nil {
				return err
			}
			return gym.Serve(cmd.Context(), o.IO.In, o.IO.Out, gym.ServeOptions{Programs: programs, Verify: o.Verify})
		},
	}
	cmd.Flags().StringVar(&o.Programs, "programs", "", "comma-separated programs (zoo models, HLO files, bench:NAME) or sets (train, heldout, all) a reset without a program picks from")
	cmd.Flags().BoolVar(&o.Verify, "verify", false, "run the HLO verifier after every pass")
	return cmd
}

// gymPrograms parses a --programs list; required says an empty list is an error.
func gymPrograms(list string, required bool) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		if required {
			return nil, fmt.Errorf("--programs: no program named (programs: zoo models, HLO files, bench:NAME; sets: train, heldout, all)")
		}
		return nil, nil
	}
	ps, err := gym.ExpandPrograms(strings.Split(list, ","))
	if err != nil {
		return nil, fmt.Errorf("--programs: %w", err)
	}
	return ps, nil
}
