package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// genMemoryArgs is docs/datasets.md's fusion example (every zoo model, 16 configs) whose peak
// memory grew with --configs and the model count until issue 24 bounded it by the
// workers; "OUT" is replaced by a fresh directory.
var genMemoryArgs = []string{"gen", "--task", "fusion", "--all", "--configs", "16", "--workers", "2", "--out", "OUT"}

// genMemory builds this tree's tpucost, runs genMemoryArgs once and returns the table
// row with its peak resident set and wall time, and the raw line.
func genMemory() (row, raw string, err error) {
	dir, err := os.MkdirTemp("", "tpucost-genmem-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tpucost")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tpucost").CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building tpucost: %v\n%s", err, out)
	}
	args := make([]string, len(genMemoryArgs))
	for i, a := range genMemoryArgs {
		args[i] = strings.ReplaceAll(a, "OUT", filepath.Join(dir, "data"))
	}
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return "", "", fmt.Errorf("tpucost %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	wall := time.Since(start).Seconds()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return "", "", fmt.Errorf("no resource usage for tpucost %s", strings.Join(args, " "))
	}
	mib := float64(ru.Maxrss) / 1024 // Linux reports KiB
	cmdline := "tpucost " + strings.Join(genMemoryArgs, " ")
	row = fmt.Sprintf("| fusion generation of every zoo model, 16 configs, 2 workers: peak resident set (whole process) | %.0f MiB (%.0f s wall) | `%s` |\n", mib, wall, cmdline)
	raw = fmt.Sprintf("%s: maxrss %.0f MiB, wall %.1f s\n", cmdline, mib, wall)
	return row, raw, nil
}
