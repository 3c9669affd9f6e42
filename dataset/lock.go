package dataset

import (
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

// lockShard takes the lock of a shard in dir without waiting. If another process holds
// it, the error says who.
func lockShard(dir string, task Task, shard, count int) (*dirlock.Lock, error) {
	l, err := dirlock.Acquire(dir, LockName(task, shard, count), dirlock.Options{What: "shard",
		Hint: "shards of one run (--shard i/n) may write into one directory at the same time"})
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return l, nil
}
