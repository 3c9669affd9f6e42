package dataset

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

// lockSuffix ends the name of a shard's lock file: "<task>-<i>of<n>.lock".
const lockSuffix = ".lock"

// LockName returns the base name of the lock file a writer of a shard holds.
func LockName(task Task, shard, count int) string {
	return fmt.Sprintf("%s-%dof%d%s", task, shard, count, lockSuffix)
}

// lockHolder is what a lock file says about the process holding it.
type lockHolder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Command string `json:"command"`
	Started string `json:"started"` // RFC 3339, UTC
}

func (h lockHolder) String() string {
	return fmt.Sprintf("pid %d on host %s, started %s, command %q", h.PID, h.Host, h.Started, h.Command)
}

// shardLock is an exclusive flock(2) on a shard's lock file. The kernel releases it when
// the holding process exits, however it exits, so a killed writer leaves no stale lock.
type shardLock struct {
	f    *os.File
	path string
}

// ErrLocked is wrapped by the error NewWriter returns when another process writes the
// same shard into the same directory.
var ErrLocked = errors.New("shard is being written by another process")

// lockShard takes the lock of a shard in dir without waiting, and records the holder
// (this process) in the lock file. If another process holds it, the error says who.
func lockShard(dir string, task Task, shard, count int) (*shardLock, error) {
	path := filepath.Join(dir, LockName(task, shard, count))
	// A holder that releases the lock removes the file; a process that opened the old
	// file just before then locks an unlinked file and must retry with the new one.
	const attempts = 8
	for range attempts {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("dataset: locking the output: %w", err)
		}
		if err := flock(f); err != nil {
			defer f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				holder := "holder not yet recorded"
				var h lockHolder
				if b, rerr := os.ReadFile(path); rerr == nil && json.Unmarshal(b, &h) == nil && h.PID != 0 {
					holder = h.String()
				}
				return nil, &FileError{File: path, Err: fmt.Errorf("%w (%s): wait for it to finish or stop it; "+
					"shards of one run (--shard i/n) may write into one directory at the same time", ErrLocked, holder)}
			}
			return nil, &FileError{File: path, Err: fmt.Errorf("locking: %w", err)}
		}
		fst, err1 := f.Stat()
		pst, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fst, pst) {
			f.Close() // released and removed by its holder meanwhile: retry
			continue
		}
		host, _ := os.Hostname()
		b, _ := json.Marshal(lockHolder{PID: os.Getpid(), Host: host, Command: strings.Join(os.Args, " "),
			Started: time.Now().UTC().Format(time.RFC3339)})
		// The holder record only explains a refusal; the lock works without it.
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
		}
		return &shardLock{f: f, path: path}, nil
	}
	return nil, &FileError{File: path, Err: errors.New("locking: the lock file keeps being replaced")}
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

// unlock removes the lock file and releases the lock (in this order: see lockShard).
func (l *shardLock) unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	rerr := os.Remove(l.path)
	cerr := l.f.Close()
	l.f = nil
	if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return fmt.Errorf("dataset: removing the lock: %w", rerr)
	}
	if cerr != nil {
		return fmt.Errorf("dataset: releasing the lock: %w", cerr)
	}
	return nil
}
