package jsonerr

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type file struct {
	Parts []struct {
		Rows struct {
			Rows int64 `json:"rows"`
		} `json:"rows_file"`
	} `json:"parts"`
	Name   string             `json:"name"`
	Sizes  []uint32           `json:"sizes"`
	Scores map[string]float64 `json:"scores"`
	On     bool               `json:"on"`
}

// TestMessages: decoding errors name the file, the field's JSON path and JSON kinds (or
// the line and column of a syntax error), never Go types or struct names.
func TestMessages(t *testing.T) {
	for _, tc := range []struct {
		data   string
		strict bool
		want   string
	}{
		{`{"parts": [{"rows_file": {"rows": "x"}}]}`, false, "m.json: field parts.rows_file.rows: want an integer, got a string"},
		{`{"parts": [{"rows_file": {"rows": 1.5}}]}`, false, "m.json: field parts.rows_file.rows: want an integer, got the number 1.5"},
		{`{"sizes": [1, -1]}`, false, "m.json: field sizes: want a non-negative integer, got the number -1"},
		{`{"sizes": {}}`, false, "m.json: field sizes: want a list of non-negative integers, got an object"},
		{`{"scores": {"a": true}}`, false, "m.json: field scores: want a number, got true or false"},
		{`{"name": 3}`, false, "m.json: field name: want a string, got a number"},
		{`{"on": "yes"}`, false, "m.json: field on: want true or false, got a string"},
		{`[1]`, false, "m.json: want an object, got a list"},
		{"{\n  \"name\": \"a\",\n  }", false, "m.json:3:3: malformed JSON: invalid character '}'"},
		{"{\n  \"name\": \"a\"", false, "m.json:2:14: malformed JSON: unexpected end of file"},
		{"{\n  \"name\": \"a\"", true, "m.json:2:14: malformed JSON: unexpected end of file"},
		{"", true, "m.json: empty file"},
		{`{"nope": 1}`, true, `m.json:1:2: unknown field "nope" (allowed: name, on, parts, scores, sizes)`},
		{"{\"parts\": [{\"rows_file\": {\"rows\": 1}},\n {\"rows_file\": {\"rows\": 2, \"bogus\": 3}}]}", true,
			`m.json:2:28: unknown field "bogus" in parts.rows_file (allowed: rows)`},
		{"{}\n{}", true, "m.json:2:2: malformed JSON: data after the top-level value"},
		{`{"parts": [{"rows_file": {"rows": "x"}}]}`, true, "m.json: field parts.rows_file.rows: want an integer, got a string"},
	} {
		var v file
		var err error
		if tc.strict {
			err = UnmarshalStrict("m.json", []byte(tc.data), &v)
		} else {
			err = Unmarshal("m.json", []byte(tc.data), &v)
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q (strict %v): %v\nwant %s...", tc.data, tc.strict, err, tc.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "Go ") || strings.Contains(msg, "int64") || strings.Contains(msg, "uint32") ||
			strings.Contains(msg, "struct") || strings.Contains(msg, "unmarshal") || strings.Contains(msg, " json: ") {
			t.Errorf("%q: %q leaks Go names", tc.data, msg)
		}
		var je *Error
		if !errors.As(err, &je) || je.File != "m.json" {
			t.Errorf("%q: %T %v, want an *Error", tc.data, err, err)
		}
	}
	var se *json.SyntaxError
	if err := Unmarshal("m.json", []byte("{,"), &file{}); !errors.As(err, &se) {
		t.Errorf("the json error is not wrapped: %v", err)
	}
	if err := Unmarshal("m.json", []byte(`{"name": "a"}`), &file{}); err != nil {
		t.Error(err)
	}
	if Explain("m.json", nil, nil) != nil {
		t.Error("Explain(nil) is not nil")
	}
}

func TestPosition(t *testing.T) {
	data := []byte("ab\ncd\n")
	for _, tc := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 2}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {6, 3, 1}, {99, 3, 1}, {-1, 1, 1}} {
		if l, c := Position(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}
