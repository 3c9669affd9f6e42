// Package outpath is the overwrite rule of every command that writes a file named by a
// flag (`compile --out`, `tune --out`): a path that does not exist is written; an existing
// file is overwritten only if it is of the command's own kind and not a member of a
// directory tpucost manages as a whole (a dataset, a model, a policy, an agent, an
// export); anything else is refused with one line naming the path and what it is, unless
// the user passes --force. `tune --budget 5 --out models/tile/model.json` once exited 0
// and destroyed a checkpoint.
package outpath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Kind is what a command writes: a name for messages and a test that existing content is
// of this kind (so that rewriting it loses nothing the user did not ask to replace).
type Kind struct {
	Name string                           // e.g. "compiler config"
	Is   func(path string, b []byte) bool // whether b, read from path, is of this kind
}

// Marker files that make a directory one tpucost manages as a whole. They are the
// libraries' own names (gnn.ModelFile, tune.PolicyFile, gym.AgentFile, the dataset
// manifests' suffix, tpugraphs.ExportManifestName); a test pins them to those.
const (
	ModelMarker    = "model.json"
	PolicyMarker   = "policy.json"
	AgentMarker    = "agent.json"
	ManifestSuffix = ".manifest.json"
	ExportMarker   = "tpucost_export.json"
)

// Managed says what tpucost directory dir is ("model checkpoint", "dataset", ...), or ""
// if it is none.
func Managed(dir string) string {
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return err == nil
	}
	switch {
	case exists(ModelMarker):
		return "model checkpoint"
	case exists(PolicyMarker):
		return "policy checkpoint"
	case exists(AgentMarker):
		return "agent checkpoint"
	case exists(ExportMarker):
		return "TpuGraphs export"
	}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ManifestSuffix) {
				return "dataset"
			}
		}
	}
	return ""
}

// CheckFile applies the rule to path, the value of flag, before a command writes a k
// there. With force it allows everything.
func CheckFile(flag, path string, k Kind, force bool) error {
	if force {
		return nil
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return nil // a directory or an unreadable path: the write itself says what is wrong
	}
	if what := Managed(filepath.Dir(path)); what != "" {
		return fmt.Errorf("%s %s: refusing to overwrite a file of a %s directory (%s): choose another path, or pass --force",
			flag, path, what, filepath.Dir(path))
	}
	if !k.Is(path, b) {
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
