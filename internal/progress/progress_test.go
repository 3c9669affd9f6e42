package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlainLinesWhenNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, "gen tile", 10)
	r.Update(1, "12 rows") // the first update always prints
	r.Update(2, "24 rows") // within the interval: suppressed
	r.Update(10, "done")   // the last step always prints
	r.Done()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[0], "gen tile: 1/10") || !strings.Contains(lines[0], "eta") || !strings.HasSuffix(lines[0], "12 rows") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "gen tile: 10/10") {
		t.Errorf("last line %q", lines[1])
	}
}

func TestLazyStartsOnFirstUpdate(t *testing.T) {
	var b bytes.Buffer
	l := NewLazy(&b, "work")
	l.Done() // nothing started: nothing written, no panic
	if b.Len() != 0 {
		t.Fatalf("wrote %q before any update", b.String())
	}
	l.Update(3, 3, "items")
	l.Done()
	if got := b.String(); !strings.Contains(got, "work: 3/3") || !strings.Contains(got, "items") {
		t.Errorf("output %q", got)
	}
}
