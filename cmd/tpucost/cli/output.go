package cli

import "io"

// cmdIO is where a command writes and how (--json): the Options of the commands that
// print one library result embed it.
type cmdIO struct {
	IO      IO
	Globals *Globals
}

// printResult prints the result of the library call it is applied to,
// o.printResult(request.Run()): the call's error if it failed, else the result on IO.Out
// (output: JSON with --json, else its text).
func (c cmdIO) printResult(r interface{ WriteText(io.Writer) error }, err error) error {
	if err != nil {
		return err
	}
	return output(c.IO.Out, c.Globals, r)
}
