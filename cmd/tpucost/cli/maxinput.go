package cli

import (
	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/internal/cliflag"
	"github.com/tpucost/tpucost/internal/inputfile"
)

// maxInputUsage is the help of --max-input-bytes.
const maxInputUsage = "the most bytes an input file may hold (HLO, config, chip, TpuGraphs files), e.g. 512MiB or 4GiB, " +
	"in place of each format's default: HLO text 256 MiB, binary HLO and TpuGraphs .pb 2 GiB, npz 4 GiB, configs 64 MiB, chip files 1 MiB"

// bindMaxInput binds the global --max-input-bytes SIZE to root: parsed as it is set
// (inputfile.ParseSize: an invalid size fails naming the flag, never falls back to a
// default), and put in every command's context (inputfile.WithMax), which the readers of
// input files take their limit from.
func bindMaxInput(root *cobra.Command) {
	var limit int64
	root.PersistentFlags().Var(cliflag.Parsed[int64]{P: &limit, Parse: inputfile.ParseSize, TypeName: "SIZE",
		Show: func(n int64) string {
			if n == 0 {
				return ""
			}
			return inputfile.FormatSize(n)
		}}, "max-input-bytes", maxInputUsage)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		cmd.SetContext(inputfile.WithMax(cmd.Context(), limit))
		return nil
	}
}
