// Package inputfile reads the files a person names on the command line (HLO modules,
// configs, chip files, TpuGraphs files): bounded in size, so an endless or huge input
// (/dev/zero, a wrong path) stops with one line instead of filling memory, and
// cancellable, so a read that waits (a FIFO no one writes, a terminal) ends when the
// command's context is cancelled (SIGINT, SIGTERM).
//
// Every reader has a Format whose default limit (Format.DefaultMax) suits that kind of
// file; one override for all formats travels in the context (WithMax), which the command
// line sets from --max-input-bytes.
package inputfile

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Flag is the command-line flag that sets the limit of every format (WithMax); errors
// about a file over its limit name it.
const Flag = "--max-input-bytes"

// Format is a kind of input file, with its own default size limit.
type Format int

const (
	// HLOText is an HLO module in XLA's text format. 256 MiB: XLA's dumps elide large
	// constants, so even modules of hundreds of thousands of instructions are tens of
	// MiB of text, and parsing holds several times the text in memory.
	HLOText Format = iota
	// HLOProto is a binary xla.HloModuleProto or HloProto (*.pb). 2 GiB: protobuf's own
	// cap on a serialized message; a proto may carry its constants' values.
	HLOProto
	// TuningProto is a TpuGraphs tpu_graphs.TuningData or ModuleTuningData (*.pb):
	// 2 GiB, protobuf's cap on a serialized message.
	TuningProto
	// NPZ is a TpuGraphs npz archive. 4 GiB: all its arrays are decoded into memory,
	// and TpuGraphs' largest files are a fraction of that.
	NPZ
	// ConfigJSON is a compiler config (compile --config, tune --out). 64 MiB: a config
	// holds a few dozen bytes per configurable node and kernel.
	ConfigJSON
	// ChipJSON is a chip preset file (--chip-file): a dozen constants; 1 MiB.
	ChipJSON
	// ManifestJSON is a JSON sidecar listing a directory's files (tpugraphs export's
	// manifest): 64 MiB, as the dataset manifest's own limit.
	ManifestJSON
)

// String names the format in messages ("HLO text", "configs").
func (f Format) String() string {
	switch f {
	case HLOText:
		return "HLO text"
	case HLOProto:
		return "binary HLO"
	case TuningProto:
		return "TpuGraphs tuning data"
	case NPZ:
		return "npz archives"
	case ConfigJSON:
		return "configs"
	case ChipJSON:
		return "chip files"
	case ManifestJSON:
		return "manifests"
	}
	return "input files"
}

// DefaultMax is f's size limit in bytes when no override is set (WithMax).
func (f Format) DefaultMax() int64 {
	switch f {
	case HLOText:
		return 256 << 20
	case HLOProto, TuningProto:
		return 2 << 30
	case NPZ:
		return 4 << 30
	case ConfigJSON, ManifestJSON:
		return 64 << 20
	case ChipJSON:
		return 1 << 20
	}
	return 64 << 20
}

// maxKey is the context key of the override (WithMax).
type maxKey struct{}

// WithMax returns ctx carrying n as the size limit of every format, in place of their
// defaults; n <= 0 leaves the defaults.
func WithMax(ctx context.Context, n int64) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, maxKey{}, n)
}

// Max is the size limit of f under ctx: the override WithMax put there, else f's default.
func Max(ctx context.Context, f Format) int64 {
	if n, ok := ctx.Value(maxKey{}).(int64); ok && n > 0 {
		return n
	}
	return f.DefaultMax()
}

// TooLargeError is a file that holds more than its limit.
type TooLargeError struct {
	Path   string
	Format Format
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the %s limit for %s (raise it with %s SIZE)", e.Path, FormatSize(e.Limit), e.Format, Flag)
}

// InterruptedError is a read (or an open) stopped because its context was cancelled. It
// says so for people ("reading PATH: interrupted") and unwraps to the context's error,
// so errors.Is(err, context.Canceled) holds.
type InterruptedError struct {
	Path string
	Err  error // the context's error
}

func (e *InterruptedError) Error() string { return "reading " + e.Path + ": interrupted" }

// Unwrap returns the context's error.
func (e *InterruptedError) Unwrap() error { return e.Err }

// ReadFile reads the file at path whole, at most Max(ctx, f) bytes of it: a larger file
// is a *TooLargeError (a regular file's size is checked before anything is read; a
// stream stops one byte past the limit, having held no more than that). If ctx is
// cancelled before the file is read — while open waits for a FIFO's writer, or a read for
// data — it returns promptly with an *InterruptedError. Other errors are the os package's.
func ReadFile(ctx context.Context, path string, f Format) ([]byte, error) {
	file, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return ReadOpen(ctx, file, f)
}

// ReadOpen is ReadFile of a file already open (Open), named by file.Name() in errors; it
// does not close file.
func ReadOpen(ctx context.Context, file *os.File, f Format) ([]byte, error) {
	path, limit := file.Name(), Max(ctx, f)
	size := int64(0)
	if st, err := file.Stat(); err == nil && st.Mode().IsRegular() {
		if st.Size() > limit {
			return nil, &TooLargeError{Path: path, Format: f, Limit: limit}
		}
		size = st.Size()
	}
	// A read waiting on a pollable file (a FIFO, a pipe, a terminal) is woken by a
	// deadline in the past; other files return promptly and the loop checks ctx.
	stop := context.AfterFunc(ctx, func() { file.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	return read(ctx, file, path, f, limit, size)
}

// Read reads r to its end, at most Max(ctx, f) bytes (else a *TooLargeError naming
// name), checking ctx between reads (then an *InterruptedError). It cannot interrupt a
// read that blocks in r; ReadFile can, for the files it opens.
func Read(ctx context.Context, r io.Reader, name string, f Format) ([]byte, error) {
	return read(ctx, r, name, f, Max(ctx, f), 0)
}

// minChunk is the first buffer of a read of unknown size.
const minChunk = 64 << 10

// read reads r under limit, starting with room for sizeHint bytes (a regular file's
// size). It reads into chunks of doubling size, never more than one byte past the limit
// in all (that byte tells an over-limit stream from one exactly at it), and joins them at
// the end: a stream over the limit costs the limit in memory, a file under it about twice
// its size for a moment, and a regular file its size.
func read(ctx context.Context, r io.Reader, name string, f Format, limit, sizeHint int64) ([]byte, error) {
	var chunks [][]byte
	total, size := int64(0), max(sizeHint+1, minChunk)
	for {
		size = min(size, limit+1-total)
		chunk := make([]byte, size)
		n, err := fill(ctx, r, chunk)
		chunks, total = append(chunks, chunk[:n]), total+int64(n)
		switch {
		case total > limit:
			return nil, &TooLargeError{Path: name, Format: f, Limit: limit}
		case err == io.EOF:
			if len(chunks) == 1 {
				return chunks[0], nil
			}
			out := make([]byte, 0, total)
			for _, c := range chunks {
				out = append(out, c...)
			}
			return out, nil
		case err != nil && ctx.Err() != nil:
			return nil, &InterruptedError{Path: name, Err: ctx.Err()}
		case err != nil:
			return nil, err
		}
		size *= 2
	}
}

// fill reads r into buf until buf is full (then a nil error), r ends (io.EOF), r fails or
// ctx is cancelled (ctx.Err()), returning the bytes read.
func fill(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Open opens path for reading. Opening a FIFO waits in open(2) for a writer; Open waits
// until ctx is cancelled, then wakes that open (by opening the FIFO for writing without
// blocking, and closing it at once) and returns an *InterruptedError, leaving no
// goroutine blocked. Any other file opens as os.Open does.
func Open(ctx context.Context, path string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, &InterruptedError{Path: path, Err: err}
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return os.Open(path)
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f, err}
	}()
	select {
	case o := <-done:
		return o.f, o.err
	case <-ctx.Done():
	}
	// The open waiting for a writer counts as a reader, so a non-blocking open for
	// writing succeeds and wakes it. It fails only if the open has already returned.
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
	go func() {
		if o := <-done; o.f != nil {
			o.f.Close()
		}
	}()
	return nil, &InterruptedError{Path: path, Err: ctx.Err()}
}

// ParseSize parses a size in bytes: a positive integer with an optional unit, binary
// (KiB, MiB, GiB, TiB; K, M, G, T alike) or decimal (kB, MB, GB, TB), e.g. "512MiB",
// "2GiB", "1048576". Zero, a negative or fractional number, an unknown unit and a size
// beyond an int64 are errors.
func ParseSize(s string) (int64, error) {
	// Longest suffixes first, so "MiB" is not read as "B".
	units := []struct {
		suffix string
		bytes  int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
		{"B", 1},
	}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(num), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a positive size in bytes, such as 512MiB, 2GiB or 1048576", s)
	}
	if n > (1<<63-1)/mult {
		return 0, fmt.Errorf("%q: too large", s)
	}
	return n * mult, nil
}

// FormatSize writes n bytes for people: "256 MiB" when n is a whole number of KiB, MiB,
// GiB or TiB, else "N bytes".
func FormatSize(n int64) string {
	for _, u := range []struct {
		name  string
		bytes int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return strconv.FormatInt(n/u.bytes, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
