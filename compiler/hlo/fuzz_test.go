package hlo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that its errors are *ParseError with a
// valid position, and that every module it accepts verifies, prints, and re-parses to
// an equal module that prints identically. Regression inputs live in
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("testdata/*.hlo")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, tc := range malformedCases() {
		f.Add([]byte(tc.src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("fuzz.hlo", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is %T, want *ParseError", err, err)
			}
			if pe.Line < 1 || pe.Col < 1 || pe.File != "fuzz.hlo" || pe.Msg == "" {
				t.Fatalf("bad error position or message: %+v", pe)
			}
			return
		}
		if err := Verify(m); err != nil {
			t.Fatalf("parsed module does not verify: %v", err)
		}
		text := m.String()
		m2, err := Parse("printed.hlo", []byte(text))
		if err != nil {
			t.Fatalf("printed module does not parse: %v\n%s", err, text)
		}
		if err := ModulesEqual(m, m2); err != nil {
			t.Fatalf("printed module parses differently: %v\n%s", err, text)
		}
		if text2 := m2.String(); text2 != text {
			t.Fatalf("printing is not stable:\n%s\n---\n%s", text, text2)
		}
	})
}
