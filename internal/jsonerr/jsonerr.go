// Package jsonerr decodes user-facing JSON files with errors written for people: a
// malformed file is reported at FILE:LINE:COL, a value of the wrong kind by its field's
// JSON path and the kinds wanted and found, never by Go type or struct names:
//
//	runs/m.manifest.json:3:17: malformed JSON: invalid character '}' looking for beginning of value
//	runs/m.manifest.json: field parts.rows_file.rows: want an integer, got a string
//
// Use Unmarshal or UnmarshalStrict in place of json.Unmarshal, or pass the error of any
// other decoding of a file's bytes (a json.Decoder's) through Explain.
package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Error is a decoding error of a JSON file. It unwraps to the encoding/json error.
type Error struct {
	File string // the file, as given
	// Line and Col locate a syntax error (1-based; Col counts bytes); both 0 otherwise.
	Line, Col int
	// Field is the JSON path of a value of the wrong kind ("parts.rows_file.rows"; empty
	// for the top-level value or other errors).
	Field string
	Msg   string // what is wrong, for people
	Err   error  // the original error
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	case e.Field != "":
		return fmt.Sprintf("%s: field %s: %s", e.File, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Unmarshal is json.Unmarshal(data, v) for data, the contents of file, with errors
// rewritten by Explain. Unknown fields are ignored, as by json.Unmarshal.
func Unmarshal(file string, data []byte, v any) error {
	return Explain(file, data, json.Unmarshal(data, v))
}

// UnmarshalStrict decodes data, the contents of file, into v, refusing unknown fields and
// anything after the value; errors are rewritten by Explain.
func UnmarshalStrict(file string, data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ExplainFor(file, data, err, v)
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		line, col := Position(data, off)
		return &Error{File: file, Line: line, Col: col, Msg: "malformed JSON: data after the top-level value"}
	}
	return nil
}

// Explain rewrites err, an error of decoding data (the contents of file) as JSON, as an
// *Error naming file: a syntax error with its line and column, a value of the wrong kind
// with its field path and the kinds wanted and found, truncated input as such, an
// unknown field by name. Other errors (a custom UnmarshalJSON's) are prefixed with file.
// nil stays nil.
func Explain(file string, data []byte, err error) error {
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		off, msg := se.Offset-1, se.Error()
		if strings.Contains(msg, "unexpected end") {
			off, msg = se.Offset, "unexpected end of file (truncated?)"
		}
		line, col := Position(data, off)
		return &Error{File: file, Line: line, Col: col, Msg: "malformed JSON: " + msg, Err: err}
	case errors.As(err, &te):
		return &Error{File: file, Field: te.Field, Msg: "want " + Kind(te.Type) + ", got " + found(te.Value), Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		line, col := Position(data, int64(len(data)))
		if len(bytes.TrimSpace(data)) == 0 {
			return &Error{File: file, Msg: "empty file: want a JSON value", Err: err}
		}
		return &Error{File: file, Line: line, Col: col, Msg: "malformed JSON: unexpected end of file (truncated?)", Err: err}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: "); ok {
		msg = rest // "unknown field \"x\"", and others without Go names
	}
	return &Error{File: file, Msg: msg, Err: err}
}

// Position returns the 1-based line and column (in bytes) of byte offset off of data.
func Position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// Kind describes a Go type as the JSON it decodes from ("an integer", "a list of
// numbers", "an object"), for messages that must not name Go types.
func Kind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return Kind(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return "a base64 string"
		}
		return "a list of " + plural(Kind(t.Elem()))
	case reflect.Map:
		return "an object of " + plural(Kind(t.Elem()))
	case reflect.Struct:
		return "an object"
	}
	return "a value"
}

// plural turns "an integer" into "integers", "a list of numbers" into "lists of numbers".
func plural(kind string) string {
	kind = strings.TrimPrefix(strings.TrimPrefix(kind, "an "), "a ")
	if kind == "true or false" {
		return "booleans"
	}
	if i := strings.Index(kind, " of "); i >= 0 {
		return kind[:i] + "s" + kind[i:]
	}
	return kind + "s"
}

// found describes the JSON value encoding/json reports ("string", "number", "number
// -1", "bool", "array", "object").
func found(v string) string {
	switch {
	case v == "string":
		return "a string"
	case v == "bool":
		return "true or false"
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "number":
		return "a number"
	case strings.HasPrefix(v, "number "):
		return "the number " + strings.TrimPrefix(v, "number ") + " (out of range or not an integer)"
	}
	return v
}
