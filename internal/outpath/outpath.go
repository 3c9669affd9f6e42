// Package outpath is the overwrite rule of every command that writes a file named by a
// flag (`compile --out`, `tune --out`): a path that does not exist is written; an existing
// file is overwritten only if it is of the command's own kind and not a member of a
// directory tpucost manages as a whole (a dataset, a model, a policy, an agent, an
// export); anything else is refused with one line naming the path and what it is, unless
// the user passes --force. `tune --budget 5 --out models/tile/model.json` once exited 0
// and destroyed a checkpoint.
package outpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/inputfile"
)

// Kind is what a command writes: a name for messages and a test that existing content is
// of this kind (so that rewriting it loses nothing the user did not ask to replace).
type Kind struct {
	Name string                           // e.g. "compiler config"
	Is   func(path string, b []byte) bool // whether b, read from path, is of this kind
}

// Marker files that make a directory one tpucost manages as a whole, when it records no
// kind (internal/dirlock's InferKind; a test pins them to the libraries' own names).
const (
	ModelMarker    = dirlock.ModelMarker
	PolicyMarker   = dirlock.PolicyMarker
	AgentMarker    = dirlock.AgentMarker
	ManifestSuffix = dirlock.ManifestSuffix
	ExportMarker   = dirlock.ExportMarker
)

// Managed says what tpucost directory dir is ("model", "dataset", ...: its kind, as
// internal/dirlock records or infers it), or "" if it is none or a directory of tuned
// configs (whose files are configs, which a config may replace).
func Managed(dir string) string {
	k, _, err := dirlock.KindOf(dir)
	switch {
	case err != nil:
		return "tpucost" // a record this tpucost cannot read: refuse, never overwrite
	case k == dirlock.TunedConfigs:
		return ""
	case k == dirlock.Export:
		return "TpuGraphs export"
	}
	return string(k)
}

// CheckFile applies the rule to path, the value of flag, before a command writes a k
// there. With force it allows everything.
func CheckFile(flag, path string, k Kind, force bool) error {
	if force {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil || st.IsDir():
		return nil // a directory or an unreadable path: the write itself says what is wrong
	}
	if what := Managed(filepath.Dir(path)); what != "" {
		return fmt.Errorf("%s %s: refusing to overwrite a file of a %s directory (%s): choose another path, or pass --force",
			flag, path, what, filepath.Dir(path))
	}
	// Only a regular file is read (a FIFO or a terminal would wait for input), and only
	// one within the limit of the largest kind a command writes, a compiler config: a
	// longer file is not of the kind.
	var b []byte
	if st.Mode().IsRegular() && st.Size() <= inputfile.ConfigJSON.DefaultMax() {
		if b, err = inputfile.ReadFile(context.Background(), path, inputfile.ConfigJSON); err != nil {
			return nil // unreadable: the write itself says what is wrong
		}
	}
	if b == nil || !k.Is(path, b) {
		return fmt.Errorf("%s %s: refusing to overwrite a file that is not a %s: choose another path, or pass --force", flag, path, k.Name)
	}
	return nil
}

// CheckDir applies the rule to a directory a command fills with files of its own (e.g.
// `tune --models --out DIR`): a directory tpucost manages as something else is refused
// unless force.
func CheckDir(flag, dir string, force bool) error {
	if force {
		return nil
	}
	if what := Managed(dir); what != "" {
		return fmt.Errorf("%s %s: refusing to write into a %s directory: choose another directory, or pass --force", flag, dir, what)
	}
	return nil
}
