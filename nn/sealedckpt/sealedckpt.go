// Package sealedckpt stores a small trained network (tune's rl policy, the gym's agent) as
// a checkpoint directory holding one JSON file: its format ("<prefix><version>"), the
// dimensions and input schema its owner checks, its parameters (nn.Saved: names, shapes,
// values in base64) and training record, sealed with the SHA-256 of all of it
// (internal/sealed) and written atomically (internal/atomicfile: a crash leaves the
// previous or the new checkpoint, never a partial one). A reader checks the format first
// (an older checkpoint has other fields), then the seal, then decodes strictly.
//
// The cost model's checkpoints (gnn) seal their model.json the same way but keep their
// weights in separate files referenced by SHA-256; they do not use this package.
package sealedckpt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
	"github.com/tpucost/tpucost/internal/sealed"
	"github.com/tpucost/tpucost/nn"
)

// Kind describes one kind of checkpoint.
type Kind struct {
	What    string // what errors call it: "policy", "agent"
	File    string // the file's name in the checkpoint directory
	Prefix  string // the format's prefix, e.g. "tpucost-rl-policy/"
	Version int    // the format version this build reads and writes
	// Older says why a checkpoint of an older version v (v < Version) cannot be read, in
	// a clause such as "format 1 decided fusion only; this build's policy decides layout
	// and fusion"; nil: nothing more than its version.
	Older func(v int) string
	// Retrain is the command that makes a checkpoint of this build's format.
	Retrain string
	// Mismatch and Corrupt are the owner's errors: every error about a checkpoint of
	// another format or other dimensions wraps Mismatch; about a failing checksum or a
	// damaged content, Corrupt.
	Mismatch, Corrupt error
}

// Format is the format string of this build's checkpoints: Prefix followed by Version.
func (k Kind) Format() string { return k.Prefix + strconv.Itoa(k.Version) }

// Save writes v to dir/k.File (dir created if needed) atomically, sealed. v must encode
// to a JSON object with one top-level "checksum" string field, empty, and its "format"
// field set to k.Format().
func (k Kind) Save(dir string, v any) error {
	b, err := sealed.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s %s: %w", k.What, dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving %s: %w", k.What, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, k.File), b); err != nil {
		return fmt.Errorf("saving %s: %w", k.What, err)
	}
	return nil
}

// Load reads dir/k.File into v and returns the file's path (for the owner's further
// errors). A file of another format is a Mismatch error (an older version of this kind
// says why and how to retrain); a failing checksum or content that does not decode
// strictly into v is a Corrupt error.
func (k Kind) Load(dir string, v any) (string, error) {
	path := filepath.Join(dir, k.File)
	b, err := os.ReadFile(path)
	if err != nil {
		return path, fmt.Errorf("loading %s: %w", k.What, err)
	}
	// The format first, whatever the other fields: an older checkpoint has other ones.
	var hdr struct {
		Format string `json:"format"`
	}
	if err := jsonerr.Unmarshal(path, b, &hdr); err != nil {
		return path, fmt.Errorf("loading %s: %w: %w", k.What, k.Corrupt, err)
	}
	if hdr.Format != k.Format() {
		if v, err := strconv.Atoi(strings.TrimPrefix(hdr.Format, k.Prefix)); err == nil && strings.HasPrefix(hdr.Format, k.Prefix) && v < k.Version {
			why := fmt.Sprintf("format %d", v)
			if k.Older != nil {
				why = k.Older(v)
			}
			return path, fmt.Errorf("loading %s %s: %w: format %q is an older %s (%s, %q): retrain it with `%s`",
				k.What, path, k.Mismatch, hdr.Format, k.What, why, k.Format(), k.Retrain)
		}
		return path, fmt.Errorf("loading %s %s: %w: format %q, want %q", k.What, path, k.Mismatch, hdr.Format, k.Format())
	}
	if err := sealed.Verify(b); err != nil {
		return path, fmt.Errorf("loading %s %s: %w: %w", k.What, path, k.Corrupt, err)
	}
	if err := jsonerr.UnmarshalStrict(path, b, v); err != nil {
		return path, fmt.Errorf("loading %s: %w: %w", k.What, k.Corrupt, err)
	}
	return path, nil
}

// Restore restores the saved parameters s of the checkpoint at path into params: a
// layout other than params' (names, shapes) is a Mismatch error, damaged values Corrupt.
func (k Kind) Restore(path string, s nn.Saved, params nn.Params) error {
	if err := s.Restore(params); errors.Is(err, nn.ErrLayout) {
		return fmt.Errorf("loading %s %s: %w: %w", k.What, path, k.Mismatch, err)
	} else if err != nil {
		return fmt.Errorf("loading %s %s: %w: %w", k.What, path, k.Corrupt, err)
	}
	return nil
}
