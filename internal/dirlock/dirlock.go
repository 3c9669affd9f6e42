// Package dirlock is the one lock every command that writes a directory takes: an
// exclusive flock(2) on a lock file in the directory, taken without waiting. The kernel
// releases it when the holding process exits, however it exits, so a killed writer leaves
// no stale lock; the lock file records the holder (pid, host, start time, command line) so
// that a refused writer is told who holds it.
package dirlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Suffix ends the name of every lock file.
const Suffix = ".lock"

// Name is the lock file of a directory one command writes as a whole (a model, a policy,
// an agent, plots, an export, the demo). Datasets lock per shard instead, so that the
// shards of one run can share a directory.
const Name = "tpucost" + Suffix

// ErrLocked is wrapped by the error Acquire returns when another process holds the lock.
var ErrLocked = errors.New("is being written by another process")

// LockedError is the error Acquire returns when another process holds the lock. It
// unwraps to ErrLocked.
type LockedError struct {
	File   string // the lock file
	What   string // what is being written ("shard", "model directory", ...)
	Holder string // who holds it, as the lock file says
	Hint   string // what to do, appended after the holder
}

func (e *LockedError) Error() string {
	s := fmt.Sprintf("%s: %s %s (%s): wait for it to finish or stop it", e.File, e.What, ErrLocked, e.Holder)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// holder is what a lock file says about the process holding it.
type holder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Command string `json:"command"`
	Started string `json:"started"` // RFC 3339, UTC
}

func (h holder) String() string {
	return fmt.Sprintf("pid %d on host %s, started %s, command %q", h.PID, h.Host, h.Started, h.Command)
}

// Lock is a held lock. The zero value and nil are released locks.
type Lock struct {
	f       *os.File
	path    string
	created string // the directory Acquire created, removed by Release if left empty
}

// Options describe a lock for the messages Acquire writes.
type Options struct {
	What string // what the lock protects, for the message: "shard", "model directory"
	Hint string // appended to the refusal, e.g. which writers may share the directory
}

// Acquire creates dir if missing and takes the lock file name in it without waiting. If
// another process holds it, the error is a *LockedError naming the file and the holder.
func Acquire(dir, name string, o Options) (*Lock, error) {
	if o.What == "" {
		o.What = "directory"
	}
	created := ""
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		created = dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	// A holder that releases the lock removes the file; a process that opened the old
	// file just before then locks an unlinked file and must retry with the new one.
	const attempts = 8
	for range attempts {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("output directory %s is not writable: %w", dir, err)
		}
		if err := flock(f); err != nil {
			defer f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				who := "holder not yet recorded"
				var h holder
				if b, rerr := os.ReadFile(path); rerr == nil && json.Unmarshal(b, &h) == nil && h.PID != 0 {
					who = h.String()
				}
				return nil, &LockedError{File: path, What: o.What, Holder: who, Hint: o.Hint}
			}
			return nil, fmt.Errorf("%s: locking: %w", path, err)
		}
		fst, err1 := f.Stat()
		pst, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fst, pst) {
			f.Close() // released and removed by its holder meanwhile: retry
			continue
		}
		host, _ := os.Hostname()
		b, _ := json.Marshal(holder{PID: os.Getpid(), Host: host, Command: strings.Join(os.Args, " "),
			Started: time.Now().UTC().Format(time.RFC3339)})
		// The holder record only explains a refusal; the lock works without it.
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		return &Lock{f: f, path: path, created: created}, nil
	}
	return nil, fmt.Errorf("%s: locking: the lock file keeps being replaced", path)
}

// flock takes an exclusive lock on f without blocking, retrying on EINTR.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// AcquireDir takes the whole-directory lock (Name) of dir, created if missing, for a
// command writing what (e.g. "model directory"). Taking it also proves dir writable, so a
// command calls it before its work, not after.
func AcquireDir(dir, what string) (*Lock, error) {
	return Acquire(dir, Name, Options{What: what})
}

// Release removes the lock file and releases the lock (in this order: see Acquire), and
// the directory if Acquire created it and nothing was written there (a refused or
// interrupted command leaves nothing behind). Releasing a released lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	rerr := os.Remove(l.path)
	cerr := l.f.Close()
	l.f = nil
	if l.created != "" {
		_ = os.Remove(l.created) // fails, as it should, unless empty
	}
	if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("removing the lock %s: %w", l.path, rerr)
	}
	if cerr != nil {
		return fmt.Errorf("releasing the lock %s: %w", l.path, cerr)
	}
	return nil
}
