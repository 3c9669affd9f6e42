package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := WriteFile(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	// A failing write leaves the old content and no temporary file.
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "one" {
		t.Errorf("content %q after a failed write", b)
	}
	if _, err := os.Stat(path + TmpSuffix); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	if err := WriteFile(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Errorf("content %q", b)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

// TestWriteOverDirectory: a directory at the path is refused saying so, before anything
// is written, never with the rename's "file exists"; the directory is left as it was.
func TestWriteOverDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data")
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("hello"))
	if err == nil || !strings.Contains(err.Error(), "a directory of that name exists") ||
		strings.Contains(err.Error(), "rename") || strings.Contains(err.Error(), "file exists") {
		t.Fatalf("WriteFile over a directory: %v", err)
	}
	if _, err := os.Stat(path + TmpSuffix); !os.IsNotExist(err) {
		t.Errorf("a temporary file was left: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(path, "x")); err != nil || !fi.IsDir() {
		t.Errorf("the directory changed: %v", err)
	}
}
