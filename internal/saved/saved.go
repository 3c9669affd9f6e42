// Package saved is the result of a command that trains something and writes it to a
// directory (`tune train-policy`, `gym train`): the record written there and the
// directory. Its JSON is the record; its text is the record's own, which names the
// directory.
package saved

import (
	"encoding/json"
	"io"
)

// Record is what a trained artifact's directory holds and can describe as text.
type Record interface {
	WriteText(w io.Writer, dir string) error
}

// Result is a record and the directory it was written to.
type Result[M Record] struct {
	Meta M
	Dir  string
}

// MarshalJSON encodes the record alone.
func (r Result[M]) MarshalJSON() ([]byte, error) { return json.Marshal(r.Meta) }

// WriteText writes the record as text, naming the directory.
func (r *Result[M]) WriteText(w io.Writer) error { return r.Meta.WriteText(w, r.Dir) }
