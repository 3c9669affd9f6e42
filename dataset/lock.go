package dataset

import (
	"errors"
	"fmt"

	"github.com/tpucost/tpucost/internal/dirlock"
)

// LockName returns the base name of the lock file a writer of a shard holds.
func LockName(task Task, shard, count int) string {
	return fmt.Sprintf("%s-%dof%d%s", task, shard, count, dirlock.Suffix)
}

// ErrLocked is wrapped by the error NewWriter returns when another process writes the
// same shard into the same directory (the one lock of internal/dirlock).
var ErrLocked = dirlock.ErrLocked

// lockShard takes the lock of a shard in dir without waiting: its own lock file
// (LockName) exclusively and the directory's lock (dirlock.Name) shared, so that the
// shards of one run may write into one directory at the same time while no other
// command (a train, an export, ...) writes there meanwhile; and it checks and records
// the directory's kind (a dataset: a model directory, say, is refused). If another
// process holds either lock, the error says who.
func lockShard(dir string, task Task, shard, count int) (*dirlock.Lock, error) {
	l, err := dirlock.AcquireShared(dir, dirlock.Dataset, LockName(task, shard, count), dirlock.Options{What: "shard",
		Hint: "shards of one run (--shard i/n) may write into one directory at the same time"})
	if errors.Is(err, dirlock.ErrOtherKind) {
		return nil, err // it names the directory and both kinds
	}
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return l, nil
}
