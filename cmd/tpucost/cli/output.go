package cli

import "io"

// cmdIO is where a command writes and how (--json): the Options of the commands that
// print a library result embed it.
type cmdIO struct {
	IO      IO
	Globals *Globals
}

// textResult is a library result that prints itself as text (its WriteText).
type textResult interface{ WriteText(w io.Writer) error }

// output returns the printer of a command's result, called on the library call that
// makes it: o.output()(request.Run()). A failed call's error is returned; else the
// result is printed on IO.Out, as JSON with --json, else as text.
func (c cmdIO) output() func(textResult, error) error {
	return func(r textResult, err error) error {
		if err != nil {
			return err
		}
		if c.Globals.JSON {
			return writeJSON(c.IO.Out, r)
		}
		return r.WriteText(c.IO.Out)
	}
}
