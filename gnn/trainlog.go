package gnn

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// TrainLogFile is the per-epoch log of training in a model directory: one JSON object
// per line and epoch (TrainLogEntry), in epoch order. It is rewritten atomically from
// the run's history after every epoch's checkpoint, so it lists exactly the epochs
// model.json records, a killed run leaves a complete log of its last checkpoint, and a
// resumed run continues it. It holds no wall-clock field, so the same seed and data give
// the same bytes; each epoch's wall time and rate are in model.json's history and in
// `train --json`.
const TrainLogFile = "train-log.jsonl"

// TrainLogEntry is one line of TrainLogFile.
type TrainLogEntry struct {
	Epoch     int        `json:"epoch"` // 1-based
	TrainLoss float64    `json:"train_loss"`
	Val       *ValResult `json:"val,omitempty"` // nil without validation rows
	Kernels   int        `json:"kernels"`       // training kernels seen
	Samples   int        `json:"samples"`       // training (kernel, config) samples seen
	// Best says the epoch beat every epoch before it (the checkpoint keeps the weights
	// of the last such epoch, the best).
	Best bool `json:"best"`
}

// newBests reports, per epoch of history, whether it beat every epoch before it (the
// trainer's rule: better).
func newBests(history []Epoch) []bool {
	out := make([]bool, len(history))
	best := -1
	for i, e := range history {
		if best < 0 || better(e, history[best]) {
			best, out[i] = i, true
		}
	}
	return out
}

// writeTrainLog writes TrainLogFile in dir from history, atomically.
func writeTrainLog(dir string, history []Epoch) error {
	bests := newBests(history)
	err := atomicfile.Write(filepath.Join(dir, TrainLogFile), func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for i, e := range history {
			if err := enc.Encode(TrainLogEntry{Epoch: e.Epoch, TrainLoss: e.TrainLoss, Val: e.Val, Kernels: e.Kernels,
				Samples: e.Samples, Best: bests[i]}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("train: the per-epoch log: %w", err)
	}
	return nil
}

// summaryEvery is the interval, in epochs, of the lines train prints of a run of epochs
// epochs (on stdout, and as progress on stderr): ⌈epochs/20⌉, so at most 20 lines besides
// the first and the last epoch (and, in the summary, the best): a screenful however long
// the run. TrainLogFile has every epoch.
func summaryEvery(epochs int) int {
	const lines = 20
	return max(1, (epochs+lines-1)/lines)
}

// showEpoch reports whether the line of epoch e (1-based) of a run of epochs epochs is
// printed (summaryEvery).
func showEpoch(e, epochs int) bool {
	return e == 1 || e == epochs || e%summaryEvery(epochs) == 0
}
