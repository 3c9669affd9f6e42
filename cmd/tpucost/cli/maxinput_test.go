package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// boundedWithin is the bound on how long `sim /dev/zero` may take to stop, and on
// how long a FIFO read may outlive SIGTERM (issue 31: "within 10 s").
const boundedWithin = 10 * time.Second

// TestSimDevZeroStops: an endless input stops at its format's limit with one line naming
// the file, the limit and the flag, and a non-zero exit (it once grew to 15 GB).
func TestSimDevZeroStops(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	start := time.Now()
	_, stderr, code := run("sim", "/dev/zero")
	if d := time.Since(start); d > boundedWithin {
		t.Errorf("took %v, want under %v", d, boundedWithin)
	}
	want := "tpucost sim: hlo: /dev/zero: larger than the 256 MiB limit for HLO text (raise it with --max-input-bytes SIZE)\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
	// The flag sets the limit.
	if _, stderr, code := run("sim", "/dev/zero", "--max-input-bytes", "4MiB"); code != 1 || !strings.Contains(stderr, "larger than the 4 MiB limit") {
		t.Errorf("--max-input-bytes 4MiB: exit %d, stderr %q", code, stderr)
	}
}

// TestMaxInputBytesFlag: the flag lowers and raises the limit of every format the
// command reads (here the HLO file and the config), and an invalid size is an error
// naming the flag, never a quiet default.
func TestMaxInputBytesFlag(t *testing.T) {
	src := "../../../compiler/hlo/testdata/comments_order.hlo"
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	_, stderr, code := run("sim", src, "--max-input-bytes", fmt.Sprint(size-1))
	if want := fmt.Sprintf("%s: larger than the %d bytes limit for HLO text (raise it with --max-input-bytes SIZE)", src, size-1); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("file over --max-input-bytes: exit %d, stderr %q; want %q", code, stderr, want)
	}
	if _, stderr, code := run("sim", src, "--max-input-bytes", fmt.Sprint(size)); code != 0 {
		t.Errorf("file at --max-input-bytes: exit %d, stderr %q", code, stderr)
	}
	cfg := filepath.Join(t.TempDir(), "cfg.json")
	if _, stderr, code := run("compile", src, "--out", cfg); code != 0 {
		t.Fatalf("compile --out: %s", stderr)
	}
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Padded with spaces past the HLO file's size: the HLO file fits the limit, the config not.
	if err := os.WriteFile(cfg, append(b, strings.Repeat(" ", int(size))...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run("sim", src, "--config", cfg); code != 0 {
		t.Fatalf("the padded config: %s", stderr)
	}
	if _, stderr, code := run("sim", src, "--config", cfg, "--max-input-bytes", fmt.Sprint(size)); code != 1 || !strings.Contains(stderr, cfg+": larger than") {
		t.Errorf("config over --max-input-bytes: exit %d, stderr %q", code, stderr)
	}
	for _, bad := range []string{"12x", "0", "-1", "1.5GiB", ""} {
		_, stderr, code := run("sim", src, "--max-input-bytes", bad)
		if want := fmt.Sprintf("--max-input-bytes %q: want a positive size in bytes", bad); code != 1 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("--max-input-bytes %q: exit %d, stderr %q; want %q", bad, code, stderr, want)
		}
	}
}

// TestSimFIFOEndsOnSIGTERM: `sim FIFO` whose writer never writes ends on one SIGTERM with
// "reading FIFO: interrupted" and ExitInterrupted (it once ignored SIGTERM for 11
// minutes). The test re-runs its own binary as the child that gets the signal.
func TestSimFIFOEndsOnSIGTERM(t *testing.T) {
	if fifo := os.Getenv("TPUCOST_FIFO_CHILD"); fifo != "" {
		os.Exit(Main([]string{"sim", fifo}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSimFIFOEndsOnSIGTERM$")
	cmd.Env = append(os.Environ(), "TPUCOST_FIFO_CHILD="+fifo)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // a child left waiting fails the test, not the suite
	// The child is reading once it has opened the FIFO: a non-blocking open for writing
	// fails (ENXIO) until then. The writer is held open and never writes, so the child's
	// read waits, with its signal handling in place.
	var w *os.File
	for deadline := time.Now().Add(time.Minute); w == nil; {
		if w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("the child never opened the FIFO: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer w.Close()
	time.Sleep(100 * time.Millisecond) // let the child's open return and its read start
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(2*boundedWithin, func() { cmd.Process.Kill() }) // a hung child fails the test, not the suite
	defer kill.Stop()
	var lines []string
	for sc := bufio.NewScanner(stderr); sc.Scan(); {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	if d := time.Since(sent); d > boundedWithin {
		t.Errorf("the child took %v after SIGTERM, want under %v", d, boundedWithin)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("child: %v, want exit %d; stderr:\n%s", err, ExitInterrupted, strings.Join(lines, "\n"))
	}
	if want := "tpucost sim: hlo: reading " + fifo + ": interrupted"; len(lines) != 1 || lines[0] != want {
		t.Errorf("stderr %q, want the one line %q", lines, want)
	}
}
