package ragged

import (
	"strings"
	"testing"
)

// TestLengthsListText: the text report lists the lengths as people write a list, not in
// Go's slice syntax ("lengths [37 64 128]").
func TestLengthsListText(t *testing.T) {
	var b strings.Builder
	if err := (&Report{Program: "p", Chip: "v4", Lengths: []int{37, 64, 128}, Batch: 3}).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "(lengths 37, 64, 128)") || strings.Contains(b.String(), "[") {
		t.Errorf("text %q; want lengths 37, 64, 128", b.String())
	}
	if got := FormatLengths(nil); got != "" {
		t.Errorf("FormatLengths(nil) = %q", got)
	}
}
