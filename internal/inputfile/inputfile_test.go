package inputfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// prompt bounds how long a cancelled open or read may take to return. A working one
// returns in microseconds; one that ignores cancellation never returns, so the bound only
// needs to sit far above scheduling delays on a loaded 2-core machine.
const prompt = 5 * time.Second

// zeros is an io.Reader that never ends, like /dev/zero. It fails the test once it has
// served more than stop bytes, so that a reader without a limit fails instead of filling
// memory.
type zeros struct {
	t       *testing.T
	served  int64
	stop    int64
	stopped bool
}

func (z *zeros) Read(p []byte) (int, error) {
	if z.served > z.stop {
		if !z.stopped {
			z.t.Errorf("read %d bytes of an endless input, past %d: no limit stopped it", z.served, z.stop)
			z.stopped = true
		}
		return 0, errors.New("test stopped the endless reader")
	}
	clear(p)
	z.served += int64(len(p))
	return len(p), nil
}

func TestReadEndlessInputStops(t *testing.T) {
	const limit = 1 << 20
	z := &zeros{t: t, stop: 4 * limit}
	_, err := Read(WithMax(context.Background(), limit), z, "endless", HLOText)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != limit {
		t.Fatalf("err = %v, want a TooLargeError at %d bytes", err, limit)
	}
	if z.served > limit+minChunk {
		t.Errorf("read %d bytes of an endless input, want at most the limit %d and one chunk", z.served, limit)
	}
}

// TestReadFileDevZero reads the endless /dev/zero under its default limit: it stops with
// one line naming the file, the limit and the flag.
func TestReadFileDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	start := time.Now()
	_, err := ReadFile(context.Background(), "/dev/zero", ChipJSON)
	if want := "/dev/zero: larger than the 1 MiB limit for chip files (raise it with --max-input-bytes SIZE)"; err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if d := time.Since(start); d > prompt {
		t.Errorf("took %v", d)
	}
}

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	limit := ChipJSON.DefaultMax()
	at, over := write("at", int(limit)), write("over", int(limit)+1)
	ctx := context.Background()
	if b, err := ReadFile(ctx, at, ChipJSON); err != nil || int64(len(b)) != limit {
		t.Errorf("a file at the limit: %d bytes, %v", len(b), err)
	}
	_, err := ReadFile(ctx, over, ChipJSON)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Path != over || tl.Limit != limit {
		t.Fatalf("a file over the limit: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, over) || !strings.Contains(msg, "1 MiB") || !strings.Contains(msg, Flag) || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line naming the file, the limit and %s", msg, Flag)
	}
	// The override raises the limit, and lowers it.
	if _, err := ReadFile(WithMax(ctx, 2*limit), over, ChipJSON); err != nil {
		t.Errorf("raised limit: %v", err)
	}
	if _, err := ReadFile(WithMax(ctx, 10), write("small", 11), ConfigJSON); !errors.As(err, &tl) || tl.Limit != 10 {
		t.Errorf("lowered limit: %v", err)
	}
	// The same sizes through a pipe, whose size is not known before reading.
	for _, n := range []int64{limit, limit + 1} {
		_, err := Read(ctx, bytes.NewReader(make([]byte, n)), "pipe", ChipJSON)
		if got := errors.As(err, &tl); got != (n > limit) {
			t.Errorf("a stream of %d bytes: %v", n, err)
		}
	}
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

// readCancelled reads path under a context cancelled after a moment, and checks that the
// read returns promptly as interrupted.
func readCancelled(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(ctx, path, HLOText)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read start waiting
	cancel()
	select {
	case err := <-done:
		var ie *InterruptedError
		if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want an InterruptedError wrapping context.Canceled", err)
		}
		if want := "reading " + path + ": interrupted"; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	case <-time.After(prompt):
		t.Fatalf("the read did not return within %v of the cancel", prompt)
	}
}

// TestFIFOOpenCancelled: opening a FIFO that no one writes waits in open(2); cancelling
// the context ends it.
func TestFIFOOpenCancelled(t *testing.T) {
	readCancelled(t, mkfifo(t))
}

// TestFIFOReadCancelled: a FIFO whose writer never writes blocks in read(2); cancelling
// the context ends it.
func TestFIFOReadCancelled(t *testing.T) {
	p := mkfifo(t)
	// O_RDWR opens a FIFO without waiting (Linux) and holds a writer that never writes.
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	readCancelled(t, p)
}

// TestFIFORead: a FIFO that is written reads like a file.
func TestFIFORead(t *testing.T) {
	p := mkfifo(t)
	go func() {
		if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			w.WriteString("HloModule m")
			w.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), prompt)
	defer cancel()
	if b, err := ReadFile(ctx, p, HLOText); err != nil || string(b) != "HloModule m" {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{
		"1": 1, "1048576": 1 << 20, "512MiB": 512 << 20, "2GiB": 2 << 30, "64KiB": 64 << 10, "1TiB": 1 << 40,
		"3M": 3 << 20, "1G": 1 << 30, "100MB": 100e6, "5kB": 5000, "7B": 7, " 8 MiB ": 8 << 20,
	} {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1", "1.5GiB", "12x", "MiB", "9999999999TiB", "1 PiB"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
	for n, want := range map[int64]string{256 << 20: "256 MiB", 2 << 30: "2 GiB", 1 << 10: "1 KiB", 1000: "1000 bytes"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
