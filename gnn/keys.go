package gnn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/sealed"
	"github.com/tpucost/tpucost/internal/stablehash"
)

// KernelID is the 64-bit identity of a kernel key: the key's value when it is the
// 16-hex-digit structural hash compiler.KernelKey makes, else the FNV-1a hash of the
// string's bytes (stablehash.Sum64Of: the values seen-keys files already store).
// Distinct keys collide with negligible probability (and a collision only makes
// evaluation exclude a row it could have scored).
func KernelID(key string) uint64 {
	if len(key) == 16 {
		if v, err := strconv.ParseUint(key, 16, 64); err == nil {
			return v
		}
	}
	return stablehash.New().Sum64Of(key)
}

// KeySet is a set of KernelIDs, sorted ascending without duplicates.
type KeySet []uint64

// Contains reports whether id is in s.
func (s KeySet) Contains(id uint64) bool {
	_, ok := slices.BinarySearch(s, id)
	return ok
}

// newKeySet returns the sorted set of the map's keys.
func newKeySet(m map[uint64]bool) KeySet {
	s := make(KeySet, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	slices.Sort(s)
	return s
}

// keysMagic opens a seen-keys file: the magic, the count (uint64) and the sorted ids
// (uint64 each), little-endian.
const keysMagic = "TPCKEYS1"

// writeKeysFile writes s to dir as seen-keys-<sha256 prefix>.bin, atomically.
func writeKeysFile(dir string, s KeySet) (FileRef, error) {
	buf := make([]byte, 0, len(keysMagic)+8+8*len(s))
	buf = append(buf, keysMagic...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(s)))
	for _, k := range s {
		buf = binary.LittleEndian.AppendUint64(buf, k)
	}
	sum := sealed.Sum(buf)
	name := "seen-keys-" + sum[:16] + ".bin"
	if err := atomicfile.WriteFile(filepath.Join(dir, name), buf); err != nil {
		return FileRef{}, fmt.Errorf("saving checkpoint: %w", err)
	}
	return FileRef{File: name, SHA256: sum}, nil
}

// parseKeys decodes a seen-keys file.
func parseKeys(data []byte) (KeySet, error) {
	if len(data) < len(keysMagic)+8 || string(data[:len(keysMagic)]) != keysMagic {
		return nil, errors.New("not a seen-keys file")
	}
	n := binary.LittleEndian.Uint64(data[len(keysMagic):])
	body := data[len(keysMagic)+8:]
	if uint64(len(body)) != 8*n || n > uint64(len(body)) {
		return nil, fmt.Errorf("%d bytes for %d keys", len(body), n)
	}
	s := make(KeySet, n)
	for i := range s {
		s[i] = binary.LittleEndian.Uint64(body[8*i:])
		if i > 0 && s[i] <= s[i-1] {
			return nil, errors.New("keys are not strictly increasing")
		}
	}
	return s, nil
}

// SeenKeys returns the KernelIDs of the kernels the model in dir (whose model.json is c)
// was trained or validated on, verified against the checksum in c. A checkpoint without
// that record (a model saved by Model.Save) yields an error: what it was trained on is
// unknown.
func SeenKeys(dir string, c *Checkpoint) (KeySet, error) {
	if c.TrainedOn == nil {
		return nil, fmt.Errorf("model %s does not record what it was trained on", dir)
	}
	data, err := readRefFile(dir, c.TrainedOn.SeenKeys)
	if err != nil {
		return nil, err
	}
	s, err := parseKeys(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %s: %w", dir, c.TrainedOn.SeenKeys.File, err)
	}
	if len(s) != c.TrainedOn.SeenKernels {
		return nil, fmt.Errorf("checkpoint %s: %s lists %d keys, %s says %d", dir, c.TrainedOn.SeenKeys.File, len(s), ModelFile, c.TrainedOn.SeenKernels)
	}
	return s, nil
}

// DatasetPaths returns the directories of the datasets the model in dir (whose
// model.json is c) was trained on, resolved against dir.
func (c *Checkpoint) DatasetPaths(dir string) []string {
	if c.TrainedOn == nil {
		return nil
	}
	var out []string
	for _, d := range c.TrainedOn.Datasets {
		p := filepath.FromSlash(d.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, p)
	}
	return out
}

// relPath expresses path relative to base (slash-separated) when it can, else absolute.
func relPath(base, path string) string {
	ab, err1 := filepath.Abs(base)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return filepath.ToSlash(path)
	}
	if r, err := filepath.Rel(ab, ap); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(ap)
}
