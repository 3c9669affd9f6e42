package cli

import "io"

// textResult is a library result that prints itself as text (its WriteText).
type textResult interface{ WriteText(w io.Writer) error }

// printResult prints a command's result on ios.Out: as JSON with --json, else as text.
func printResult(ios IO, g *Globals, r textResult) error {
	if g.JSON {
		return writeJSON(ios.Out, r)
	}
	return r.WriteText(ios.Out)
}
