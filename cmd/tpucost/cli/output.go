package cli

import "io"

// cmdIO is where a command writes and how (--json): the Options of the commands that
// print one library result embed it.
type cmdIO struct {
	IO      IO
	Globals *Globals
}

// printResult prints the result of the library call it is applied to,
// o.printResult(request.Run()): the call's error if it failed, else the result on IO.Out,
// as JSON with --json, else as its text.
func (c cmdIO) printResult(r interface{ WriteText(io.Writer) error }, err error) error {
	switch {
	case err != nil:
		return err
	case c.Globals.JSON:
		return writeJSON(c.IO.Out, r)
	}
	return r.WriteText(c.IO.Out)
}
