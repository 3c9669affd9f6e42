package gnn

import (
	"fmt"
	"io"

	"github.com/tpucost/tpucost/dataset"
)

// LoadTileModel loads the model in dir to score kernels' tile options for t (LoadFor with
// a fixed target), as `tpucost validate --model` does: a model of another task than tile
// is refused. A target mismatch (allowed with allowMismatch) is warned about on warn
// (nil: dropped). The caller closes the returned Predictor.
func LoadTileModel(dir string, t Target, allowMismatch bool, warn io.Writer) (*Loaded, error) {
	l, err := LoadFor(dir, func(Meta) (Target, error) { return t, nil }, allowMismatch)
	if err != nil {
		return nil, err
	}
	if l.Mismatch != "" && warn != nil {
		fmt.Fprintf(warn, "WARNING: %s\n", l.Mismatch)
	}
	if task := l.Checkpoint.Task; task != dataset.TaskTile {
		l.Predictor.Close()
		return nil, fmt.Errorf("--model %s is a %s model: validate scores tile runs with a tile model", dir, task)
	}
	return l, nil
}
