// Package dirlock is the one lock every command that writes a directory takes, and the
// record of what the directory holds (its Kind).
//
// The lock is a flock(2) on the directory's lock file (Name), taken without waiting:
// exclusive for a writer of the whole directory (a model, a policy, plots, ...: AcquireDir),
// shared for the writers that may share one (the shards of a dataset: AcquireShared,
// which also takes the shard's own lock file exclusively). So a directory one command
// writes is locked for every other, whatever its kind, and the shards of one gen run still
// write side by side. The kernel releases a lock when the holding process exits, however
// it exits, so a killed writer leaves no stale lock; the lock file records the holder
// (pid, host, start time, command line) so that a refused writer is told who holds it.
//
// Under the lock, the writer's kind is checked against the directory's (KindOf: the
// KindFile record, else inferred from the files of a directory written before records
// existed), and recorded if the directory has none: writing one kind into a directory of
// another is refused with a *KindError.
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

// Name is the lock file of every directory tpucost writes: held exclusively by a writer
// of the whole directory (a model, a policy, an agent, plots, an export, the demo, tuned
// configs), shared by the shards of a dataset (each of which also holds its own lock file
// exclusively).
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

// Lock is a held lock: the directory's lock file (Name), and for a shared writer its own
// lock file too. The zero value and nil are released locks.
type Lock struct {
	dir     string
	f       *os.File // the directory's lock file
	path    string
	shared  bool
	own     *os.File // a shared writer's own lock file
	ownPath string
	created string // the directory Acquire created, removed by Release if left empty
}

// Options describe a shared writer's own lock for the messages AcquireShared writes.
type Options struct {
	What string // what the own lock protects, for the message: "shard"
	Hint string // appended to the refusal, e.g. which writers may share the directory
}

// AcquireDir takes the lock of dir (created if missing) exclusively for a writer of kind
// k of the whole directory, checks that dir holds no other kind and records k if it
// holds none. If another process holds the lock, in any mode, the error is a
// *LockedError naming the lock file and the holder; a directory of another kind is a
// *KindError. Taking the lock also proves dir writable, so a command calls it before
// its work, not after.
func AcquireDir(dir string, k Kind) (*Lock, error) {
	return acquire(dir, k, false, "", Options{})
}

// AcquireShared takes the lock of dir (created if missing) shared for one of the writers
// of kind k that may write into one directory at the same time (the shards of a
// dataset), and the lock file name in dir, its own, exclusively (o describes it in the
// refusal). A writer holding dir's lock exclusively (AcquireDir) excludes it, and it
// excludes such a writer. Kinds are checked and recorded as by AcquireDir.
func AcquireShared(dir string, k Kind, name string, o Options) (*Lock, error) {
	if name == "" || name == Name || !strings.HasSuffix(name, Suffix) {
		return nil, fmt.Errorf("dirlock: a shared writer's own lock file %q must end in %s and differ from %s", name, Suffix, Name)
	}
	return acquire(dir, k, true, name, o)
}

func acquire(dir string, k Kind, shared bool, own string, o Options) (*Lock, error) {
	if !k.valid() {
		return nil, fmt.Errorf("dirlock: unknown kind %q", k)
	}
	created := ""
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		created = dir
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	path := filepath.Join(dir, Name)
	f, err := lockFile(dir, path, shared, Options{What: "directory"})
	if err != nil {
		if created != "" {
			_ = os.Remove(created)
		}
		return nil, err
	}
	l := &Lock{dir: dir, f: f, path: path, shared: shared, created: created}
	fail := func(err error) (*Lock, error) {
		l.Release()
		return nil, err
	}
	// The kind is checked under the lock (a directory another command holds is refused
	// as locked, whatever its kind), so that no other writer records one meanwhile.
	recorded, err := checkKind(dir, k)
	if err != nil {
		return fail(err)
	}
	if !recorded {
		if err := writeKind(dir, k); err != nil {
			return fail(err)
		}
	}
	if shared {
		l.ownPath = filepath.Join(dir, own)
		if o.What == "" {
			o.What = "directory"
		}
		if l.own, err = lockFile(dir, l.ownPath, false, o); err != nil {
			return fail(err)
		}
	}
	return l, nil
}

// lockFile locks the file path in dir without waiting (a shared lock: 0.2 s at most, see
// below), exclusively or shared, and
// records this process as its holder (a shared holder only in a file none has recorded
// itself in). If another process holds it, the error is a *LockedError naming the file
// and the holder (o.What and o.Hint describe it).
func lockFile(dir, path string, shared bool, o Options) (*os.File, error) {
	// A holder that releases the lock removes the file; a process that opened the old
	// file just before then locks an unlinked file and must retry with the new one.
	// A shared lock is also refused for the moment the last shared holder converts its
	// lock to release it (Release): a shard starting as another ends waits that out.
	const attempts, sharedWaits, sharedWait = 8, 10, 20 * time.Millisecond
	waits := 0
	for range attempts + sharedWaits {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("output directory %s is not writable: %w", dir, err)
		}
		if err := flock(f, shared); err != nil {
			if shared && errors.Is(err, syscall.EWOULDBLOCK) && waits < sharedWaits {
				f.Close()
				waits++
				time.Sleep(sharedWait)
				continue
			}
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
		// The holder record only explains a refusal; the lock works without it. Shared
		// holders leave the first one's record in place.
		if !shared || fst.Size() == 0 {
			if err := f.Truncate(0); err == nil {
				_, _ = f.WriteAt(append(b, '\n'), 0)
			}
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s: locking: the lock file keeps being replaced", path)
}

// flock locks f without blocking, exclusively or shared, retrying on EINTR. On a file
// this process holds shared, an exclusive flock converts the lock (and on failure
// leaves none).
func flock(f *os.File, shared bool) error {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// Release releases a shared writer's own lock (removing its file), then the directory's
// lock. The last holder of the directory's lock (the exclusive one, or a shared one no
// other shares it with any more) removes the kind record if nothing else was written
// there, then the lock file, then releases the lock (in this order: see lockFile), and
// the directory if Acquire created it and it is left empty (a refused or interrupted
// command leaves nothing behind). Releasing a released lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	var errs []error
	if l.own != nil {
		if err := os.Remove(l.ownPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the lock %s: %w", l.ownPath, err))
		}
		if err := l.own.Close(); err != nil {
			errs = append(errs, fmt.Errorf("releasing the lock %s: %w", l.ownPath, err))
		}
		l.own = nil
	}
	// A shared holder is the last if it can convert its lock to an exclusive one.
	last := !l.shared || flock(l.f, false) == nil
	if last {
		removeBareKind(l.dir)
		if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing the lock %s: %w", l.path, err))
		}
	}
	if err := l.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("releasing the lock %s: %w", l.path, err))
	}
	l.f = nil
	if l.created != "" {
		_ = os.Remove(l.created) // fails, as it should, unless empty
	}
	return errors.Join(errs...)
}
