package dataset

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Fingerprint identifies the data of the dataset directory dir: the SHA-256 (hex) of the
// sorted list of its part files (rows and occurrences files whose names parse as part
// files; temporary files and anything else are ignored), one line per file holding its
// name relative to dir, its size in bytes and the SHA-256 of its content:
//
//	"<name>\t<size>\t<sha256 hex>\n"
//
// Two directories holding byte-identical part files have the same fingerprint wherever
// they are; changing, adding or removing any part file changes it. It reads every part
// file once and fails if dir holds none.
func Fingerprint(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("dataset fingerprint: %w", err)
	}
	var names []string
	for _, e := range entries {
		if _, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return "", fmt.Errorf("dataset fingerprint: %s holds no dataset part files", dir)
	}
	slices.Sort(names)
	list := sha256.New()
	for _, name := range names {
		size, sum, err := hashFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("dataset fingerprint: %w", err)
		}
		fmt.Fprintf(list, "%s\t%d\t%s\n", name, size, sum)
	}
	return hex.EncodeToString(list.Sum(nil)), nil
}

// hashFile returns the size and SHA-256 (hex) of the file at path.
// Fingerprint is the fingerprint (see the function Fingerprint) of the dataset's committed
// part files, from the sizes and SHA-256 sums Open verified against the manifests: no
// file is read again. It equals Fingerprint(d.Dir) unless the directory also holds a
// shard's uncommitted next part, which is not part of the dataset.
func (d *Dataset) Fingerprint() string {
	files := slices.Clone(d.checksums)
	slices.SortFunc(files, func(a, b ManifestFile) int { return strings.Compare(a.Name, b.Name) })
	list := sha256.New()
	for _, f := range files {
		fmt.Fprintf(list, "%s\t%d\t%s\n", f.Name, f.SizeBytes, f.SHA256)
	}
	return hex.EncodeToString(list.Sum(nil))
}

func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
