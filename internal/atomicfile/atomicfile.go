// Package atomicfile writes files so that readers never see a partial one: the content
// goes to "<path>.tmp" in the same directory, is synced, and is renamed over path only
// when complete; on failure the temporary file is removed. A crash can leave a stale
// "<path>.tmp" behind, never a partial path.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// TmpSuffix is appended to the final name while a file is being written.
const TmpSuffix = ".tmp"

// Write writes path atomically with write, which gets a buffered writer.
func Write(path string, write func(io.Writer) error) error {
	return WriteVia(path, path+TmpSuffix, write)
}

// WriteVia is Write with the temporary file named tmp (which must be in path's directory
// and should end in TmpSuffix), for writers that need temporary names unique to them.
//
// A directory at path is refused before anything is written, saying so (renaming a file
// over it would fail with the operating system's "file exists"); a failed rename is said
// in words, without the system call's.
func WriteVia(path, tmp string, write func(io.Writer) error) (err error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("writing %s: a directory of that name exists: give the path of a file, or move the directory away", path)
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return fmt.Errorf("could not move the finished file into place: %w", le.Err)
		}
	}
	return err
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
