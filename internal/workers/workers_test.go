package workers

import (
	"fmt"
	"strings"
	"testing"
)

func TestRule(t *testing.T) {
	if !strings.Contains(Want, fmt.Sprintf("[0, %d]", Max)) {
		t.Errorf("Want %q does not state Max %d", Want, Max)
	}
	for n, ok := range map[int]bool{-1: false, 0: true, 1: true, Max: true, Max + 1: false, 1 << 16: false} {
		if err := Check("--workers", n); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "--workers")) {
			t.Errorf("Check(%d) = %v", n, err)
		}
	}
}
