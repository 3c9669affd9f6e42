package rl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tpucost/tpucost/nn/sealedckpt"
)

// Codec is the checkpoint codec of one kind of policy: a sealed, atomically written JSON
// file (nn/sealedckpt) that records, besides the owner's dimensions, schema, parameters
// and training record, the action list the policy was trained on ("actions"). Loading
// checks the action list: a checkpoint trained on another list is
// refused with one line naming the first difference, never remapped (an action index
// means an action only against its list). A directory that holds another policy kind's
// checkpoint (Peers) in place of this kind's is judged the same way: refused where the
// action lists differ, read where they agree (Peers lists the kinds).
type Codec struct {
	sealedckpt.Kind
	// Actions is this build's action list of the policy.
	Actions []string
	// ListName is what errors call the action list: "pass list", "decision list".
	ListName string
	// Implicit, if set, is the action list of this kind's checkpoints written before the
	// list was recorded (their format fixed it); nil: such a checkpoint is refused.
	Implicit []string
}

// The file names of the project's policy checkpoints in their directories.
const (
	AgentFile  = "agent.json"  // the gym's pass-ordering agent
	PolicyFile = "policy.json" // tune's layout and fusion policy (the rl strategy)
)

// Peer names a policy kind's checkpoint file.
type Peer struct {
	What string // "gym agent", "tune rl policy"
	File string // its file name in a checkpoint directory
}

// Peers are the policy kinds whose checkpoints a directory may hold (Codec.Load looks
// for the others' files when its own is absent).
func Peers() []Peer {
	return []Peer{{What: "gym agent", File: AgentFile}, {What: "tune rl policy", File: PolicyFile}}
}

// header is what the codec reads of any policy checkpoint before its owner does.
type header struct {
	Format  string   `json:"format"`
	Actions []string `json:"actions"`
}

// Save writes v (the owner's file struct: a JSON object with an empty "checksum", its
// "format" set to c.Format() and its "actions" set to c.Actions) to dir/c.File
// atomically, sealed.
func (c Codec) Save(dir string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("saving %s %s: %w", c.What, dir, err)
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("saving %s %s: %w", c.What, dir, err)
	}
	if err := SameActions(h.Actions, c.Actions, c.ListName); err != nil {
		return fmt.Errorf("saving %s %s: the file's actions are not this build's: %w", c.What, dir, err)
	}
	return c.Kind.Save(dir, v)
}

// Load reads the checkpoint in directory dir into v (the owner's file struct; see
// sealedckpt.Kind.Load for the format, seal and strict decoding) and returns its path.
// Where dir holds no file of this kind but a peer's, the peer's action list is compared
// with this kind's first: another list is a one-line Mismatch error, an equal one is read
// like this kind's own file. A checkpoint of this kind whose action list differs from
// c.Actions is a Mismatch error too.
func (c Codec) Load(dir string, v any) (string, error) {
	path := filepath.Join(dir, c.File)
	k := c.Kind
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		for _, p := range Peers() {
			if p.File == c.File {
				continue
			}
			pp := filepath.Join(dir, p.File)
			b, err := os.ReadFile(pp)
			if err != nil {
				continue
			}
			var h header
			if err := json.Unmarshal(b, &h); err != nil {
				return pp, fmt.Errorf("loading %s %s: %w: it holds a %s checkpoint (%s) that is not JSON: %w", c.What, dir, c.Mismatch, p.What, p.File, err)
			}
			if err := SameActions(h.Actions, c.Actions, c.ListName); err != nil {
				return pp, fmt.Errorf("loading %s %s: %w: it holds a %s checkpoint (%s) trained on %s; this %s's are %s", c.What, dir, c.Mismatch,
					p.What, p.File, describe(h.Actions), c.What, describe(c.Actions))
			}
			k.File = p.File
			break
		}
	}
	path, err := k.Load(dir, v)
	if err != nil {
		return path, err
	}
	// The list as the file has it (not as v holds it: v may be a reused value).
	b, err := os.ReadFile(path)
	if err != nil {
		return path, fmt.Errorf("loading %s: %w", c.What, err)
	}
	var h header
	if err := json.Unmarshal(b, &h); err != nil {
		return path, fmt.Errorf("loading %s %s: %w: %w", c.What, path, c.Corrupt, err)
	}
	if len(h.Actions) == 0 && c.Implicit != nil {
		h.Actions = c.Implicit
	}
	if err := SameActions(h.Actions, c.Actions, c.ListName); err != nil {
		return path, fmt.Errorf("loading %s %s: %w: %w (retrain it with `%s`)", c.What, path, c.Mismatch, err, c.Retrain)
	}
	return path, nil
}

// describe is an action list in an error: its length and its first and last actions.
func describe(as []string) string {
	switch {
	case len(as) == 0:
		return "no recorded actions"
	case len(as) <= 4:
		return fmt.Sprintf("%d actions (%s)", len(as), strings.Join(as, ", "))
	default:
		return fmt.Sprintf("%d actions (%s, %s, ..., %s)", len(as), as[0], as[1], as[len(as)-1])
	}
}

// SameActions checks that a checkpoint's recorded action list saved is this build's now,
// naming the first difference; list is what the error calls the list ("pass list").
func SameActions(saved, now []string, list string) error {
	if len(saved) == 0 {
		return fmt.Errorf("it records no action list (saved by an earlier build); this build has %d actions", len(now))
	}
	for i := range min(len(saved), len(now)) {
		if saved[i] != now[i] {
			return fmt.Errorf("it was trained on another %s: action %d is %q there, %q here (%d actions there, %d here)", list, i, saved[i], now[i], len(saved), len(now))
		}
	}
	if len(saved) != len(now) {
		return fmt.Errorf("it was trained on another %s: %d actions there, %d here (the first %d agree)", list, len(saved), len(now), min(len(saved), len(now)))
	}
	return nil
}
