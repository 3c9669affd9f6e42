package tune

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/internal/dirlock"
	"github.com/tpucost/tpucost/internal/outpath"
)

// ConfigOut writes the tuned configs of a run (tpucost tune --out): for one program a
// config file (compiler.WriteConfig, which `tpucost sim --config` reproduces), in batch
// mode a directory of PROGRAM.json, written as each program finishes. A ConfigOut holds
// the directory's writer lock in batch mode until Close.
type ConfigOut struct {
	flag  string // the option that named path, in errors (e.g. "--out")
	path  string
	batch bool
	force bool
	lock  *dirlock.Lock
}

// OpenConfigOut checks path before a search starts, so that a finished search is not
// lost to an output it cannot write: for one program, a file path that is not a
// directory, in an existing writable directory, not a file of another kind unless force
// (outpath.CheckFile); in batch mode, a directory (existing, or to be created at the
// first write in a writable one) that is not a model, dataset, policy or agent directory
// unless force (outpath.CheckDir), whose writer lock it takes. flag names the option in
// errors.
func OpenConfigOut(flag, path string, batch, force bool) (*ConfigOut, error) {
	if err := checkOutPath(flag, path, batch); err != nil {
		return nil, err
	}
	c := &ConfigOut{flag: flag, path: path, batch: batch, force: force}
	if !batch {
		return c, outpath.CheckFile(flag, path, compiler.ConfigFileKind(), force)
	}
	if err := outpath.CheckDir(flag, path, force); err != nil {
		return nil, err
	}
	// One writer per directory of tuned configs.
	lock, err := dirlock.AcquireDir(path, dirlock.TunedConfigs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	c.lock = lock
	return c, nil
}

// Write writes the tuned config of r: to the file, or in batch mode to PROGRAM.json in
// the directory (created if missing).
func (c *ConfigOut) Write(r *Report) error {
	path := c.path
	if c.batch {
		if err := os.MkdirAll(c.path, 0o755); err != nil {
			return fmt.Errorf("%s: %w", c.flag, err)
		}
		path = filepath.Join(c.path, r.Program+".json")
		if err := outpath.CheckFile(c.flag, path, compiler.ConfigFileKind(), c.force); err != nil {
			return err
		}
	}
	if err := compiler.WriteConfig(path, r.Config); err != nil {
		return fmt.Errorf("%s: %w", c.flag, err)
	}
	return nil
}

// Close releases the directory's lock (batch mode). Closing a nil or closed ConfigOut
// does nothing.
func (c *ConfigOut) Close() error {
	if c == nil {
		return nil
	}
	return c.lock.Release()
}

// checkOutPath checks that path can be written before the search starts: for one
// program, a file path that is not a directory, in an existing writable directory; in
// batch mode, a directory, existing or to be created in a writable one.
func checkOutPath(flag, out string, batch bool) error {
	st, err := os.Stat(out)
	switch {
	case err == nil && st.IsDir() && !batch:
		return fmt.Errorf("%s %s is a directory: give the path of the config file to write (a directory is for --models and --all)", flag, out)
	case err == nil && !st.IsDir() && batch:
		return fmt.Errorf("%s %s is a file: in batch mode %s is a directory of MODEL.json files", flag, out, flag)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", flag, err)
	}
	dir := filepath.Dir(out)
	if batch {
		// The directory itself, or the nearest ancestor that exists.
		for dir = filepath.Clean(out); ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s %s: %s is not an existing directory", flag, out, dir)
	}
	f, err := os.CreateTemp(dir, ".tpucost-write-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write in %s: %w", flag, out, dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
