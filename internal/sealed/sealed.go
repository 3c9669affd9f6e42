// Package sealed gives a JSON file a checksum of itself: one top-level string field
// "checksum" holds the SHA-256 (hex) of the file's bytes with that field's value empty.
// A reader verifies the file before trusting any value in it, so a flipped byte or a
// hand edit is caught; the file stays readable by any JSON tool. Checkpoints (model.json)
// and dataset manifests are sealed this way.
package sealed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// field opens the checksum's value in the encoded file. JSON escapes quotes inside
// strings, so the sequence cannot occur inside a value; it must occur exactly once.
const field = `"checksum": "`

// ErrNoChecksum is Verify's error for a file without a checksum field (written before
// files were sealed, or damaged).
var ErrNoChecksum = errors.New("no checksum field")

// Seal fills the empty checksum field of the encoded JSON data (as json.MarshalIndent
// writes `"checksum": ""`) with the SHA-256 of data and returns the sealed bytes.
func Seal(data []byte) ([]byte, error) {
	if n := bytes.Count(data, []byte(field)); n != 1 {
		return nil, fmt.Errorf("sealing: %d checksum fields, want exactly one", n)
	}
	i := bytes.Index(data, []byte(field+`"`))
	if i < 0 {
		return nil, errors.New("sealing: the checksum field is not empty")
	}
	j := i + len(field)
	return slices.Concat(data[:j], []byte(Sum(data)), data[j:]), nil
}

// Marshal encodes v as indented JSON (two spaces, a final newline), v's checksum field
// (a top-level string field tagged "checksum", which must be empty) sealed: the
// form every sealed file is written in.
func Marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return Seal(append(b, '\n'))
}

// Verify checks data's checksum field against the SHA-256 of data with that field's value
// empty. The error says what differs (both sums, shortened); ErrNoChecksum when there is
// no field.
func Verify(data []byte) error {
	switch n := bytes.Count(data, []byte(field)); {
	case n == 0:
		return ErrNoChecksum
	case n > 1:
		return fmt.Errorf("%d checksum fields, want exactly one", n)
	}
	j := bytes.Index(data, []byte(field)) + len(field)
	end := bytes.IndexByte(data[j:], '"')
	if end < 0 {
		return errors.New("unterminated checksum field")
	}
	got := string(data[j : j+end])
	if want := Sum(slices.Concat(data[:j], data[j+end:])); got != want {
		return fmt.Errorf("checksum %s, the content hashes to %s: changed after it was written, or damaged", short(got), short(want))
	}
	return nil
}

// Sum is the SHA-256 of data in hex.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func short(s string) string {
	if len(s) > 16 {
		return s[:16] + "..."
	}
	return s
}
