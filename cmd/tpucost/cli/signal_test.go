package cli

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMainInterruptedBySignal: Main's context is cancelled by SIGINT, so a long tune
// started through Main stops, says it was interrupted and exits with ExitInterrupted. The
// test re-runs its own binary as the child that gets the signal.
func TestMainInterruptedBySignal(t *testing.T) {
	if os.Getenv("TPUCOST_SIGNAL_CHILD") == "1" {
		os.Exit(Main([]string{"tune", "bert_base_s384_b1", "--budget", "1000000", "--workers", "1"}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainInterruptedBySignal$")
	cmd.Env = append(os.Environ(), "TPUCOST_SIGNAL_CHILD=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal once the search has started (its first progress line).
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "tune bert_base_s384_b1") {
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	kill := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() }) // a hung child fails the test, not the suite
	defer kill.Stop()
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("child: %v, want exit %d; stderr:\n%s", err, ExitInterrupted, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "interrupted") || !strings.Contains(last, "re-run") {
		t.Errorf("last stderr line %q", last)
	}
}
