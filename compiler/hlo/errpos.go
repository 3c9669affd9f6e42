package hlo

import (
	"fmt"
	"strings"
)

// SourceError is an error found after import that belongs to one place of the module's
// text: an instruction (At) or an attribute. Its message is Err's; Module.Wrap puts the
// place in front as file:line:col.
type SourceError struct {
	Line, Col int // 1-based; 0 when the place was not parsed from text
	Err       error
}

// Error returns Err's message (Module.Wrap adds the position).
func (e *SourceError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *SourceError) Unwrap() error { return e.Err }

// At marks err as belonging to instruction in (its definition's position). A nil err
// stays nil.
func At(in *Instruction, err error) error {
	if err == nil {
		return nil
	}
	return &SourceError{Line: in.Line, Col: in.Col, Err: err}
}

// AtPos is At for a position of the text other than an instruction's (a sharding's).
func AtPos(line, col int, err error) error {
	if err == nil {
		return nil
	}
	return &SourceError{Line: line, Col: col, Err: err}
}

// Wrap returns err as the one-line error a user sees for module m: "file:line:col: msg"
// where the position is the first SourceError with a position inside err (the
// instruction or attribute it is about), else the module's header; msg is err's message
// with any line breaks (joined errors) turned into "; ". A module built in memory (no
// File) gives "name: msg" as before. An error Wrap already returned is returned as it
// is (a stage that wraps its own errors, such as the partitioner, may be wrapped again
// by its caller). Wrap keeps err in the chain (errors.Is/As) and returns nil for nil.
func (m *Module) Wrap(err error) error {
	if err == nil {
		return nil
	}
	if _, done := err.(*placedError); done {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	if m.File == "" {
		return &placedError{msg: m.Name + ": " + msg, err: err}
	}
	line, col := m.Line, m.Col
	if se := firstPos(err); se != nil {
		line, col = se.Line, se.Col
	}
	if line <= 0 {
		line, col = 1, 1
	}
	return &placedError{msg: fmt.Sprintf("%s:%d:%d: %s", m.File, line, col, msg), err: err}
}

// placedError is an error Module.Wrap placed: its message, and the error it came from.
type placedError struct {
	msg string
	err error
}

func (e *placedError) Error() string { return e.msg }
func (e *placedError) Unwrap() error { return e.err }

// firstPos finds the first SourceError with a position in err's tree (depth first, in
// the order errors.Join keeps).
func firstPos(err error) *SourceError {
	if se, ok := err.(*SourceError); ok && se.Line > 0 {
		return se
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if se := firstPos(e); se != nil {
				return se
			}
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return firstPos(e)
		}
	}
	return nil
}
