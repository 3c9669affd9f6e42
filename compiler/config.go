package compiler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/inputfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
	"github.com/tpucost/tpucost/internal/outpath"
)

// ConfigVersion is the version of the JSON config format.
const ConfigVersion = 1

// Kind names one pass's kind of configuration.
type Kind string

// The configuration kinds, one per configurable pass.
const (
	KindLayout Kind = "layout"
	KindFusion Kind = "fusion"
	KindTile   Kind = "tile"
	KindFlags  Kind = "flags"
	// KindStaging is the staging pass's per-edge decision: keep a producer kernel's output
	// resident in VMEM for a consumer kernel (see Options.Staging).
	KindStaging Kind = "staging"
)

// Kinds lists the kinds in pipeline order: the registry's (kind.go's kinds).
func Kinds() []Kind {
	out := make([]Kind, len(kinds))
	for i, o := range kinds {
		out[i] = o.kind()
	}
	return out
}

// Relative reports whether the kind's choices are compared within one kernel (tile,
// flags: a relative cost model ranks them) rather than across programs (layout, fusion:
// an absolute model predicts kernel runtimes). The kind registry says which; a name
// that is not a registered kind is not relative.
func (k Kind) Relative() bool {
	for _, o := range kinds {
		if o.kind() == k {
			return o.relative()
		}
	}
	return false
}

// Config holds per-node choices for every configurable pass. Missing entries mean "use the
// global config store, else the default". Layout entries are keyed by instruction name
// (the minor-to-major order of its result); fusion entries by edge name
// "producer->consumer" (true: fuse the producer into the consumer's kernel); tile and
// flags entries by kernel key (the structural hash of the fused computation), so every
// copy of an identical kernel shares them; staging entries by kernel edge name
// "producer->consumer" of the two kernels' fusion instruction names (true: the consumer
// reads the producer's output from VMEM; see Options.Staging).
//
// Layout orders: a layout entry is a minor-to-major order of the result's dimensions
// (the minor-most first), or a prefix of one: the dimensions it lists are the minor ones,
// in that order, and the others follow, more major, in row-major order (descending
// dimension number), so [4 0] on a rank-5 result is {4,0,3,2,1}. The valid orders are
// LayoutOptions' (every order up to rank 5); one that differs from an option only in
// where size-1 dimensions go is that option. Names of instructions outside the entry computation are
// qualified by their computation, "computation/instruction".
//
// OperandLayout entries (same names; layout-configurable instructions only) constrain
// the layouts a node reads its operands in: one order (or prefix) per operand, in operand
// order; an empty order leaves that operand unconstrained. An operand whose layout
// differs physically from the constraint is copied into it (a transpose, which fusion
// may absorb into the producer's or the consumer's kernel), as XLA's layout assignment
// does for an operand constraint. Operand layouts are config-only: the Space and the
// tuner do not search them, and the global store does not hold them.
type Config struct {
	Version       int                   `json:"version"`
	Layout        map[string][]int      `json:"layout,omitempty"`
	OperandLayout map[string][][]int    `json:"operand_layout,omitempty"`
	Fusion        map[string]bool       `json:"fusion,omitempty"`
	Tile          map[string]cost.Tile  `json:"tile,omitempty"`
	Flags         map[string]cost.Flags `json:"flags,omitempty"`
	Staging       map[string]bool       `json:"staging,omitempty"`
}

// NewConfig returns an empty config.
func NewConfig() *Config {
	c := &Config{Version: ConfigVersion, OperandLayout: map[string][][]int{}}
	for _, o := range kinds {
		o.init(c)
	}
	return c
}

// Clone returns a deep copy (nil gives an empty config).
func (c *Config) Clone() *Config {
	n := NewConfig()
	if c == nil {
		return n
	}
	for _, o := range kinds {
		for _, name := range o.names(c) {
			e, _ := o.get(c, name)
			o.set(n, name, e)
		}
	}
	for name, ops := range c.OperandLayout {
		cp := make([][]int, len(ops))
		for i, o := range ops {
			cp[i] = slices.Clone(o)
		}
		n.OperandLayout[name] = cp
	}
	return n
}

// Len is the number of entries of all kinds, operand layouts included.
func (c *Config) Len() int {
	if c == nil {
		return 0
	}
	n := len(c.OperandLayout)
	for _, o := range kinds {
		n += o.size(c)
	}
	return n
}

// MarshalIndent renders the config as stable, indented JSON (map keys sorted).
func (c *Config) MarshalIndent() ([]byte, error) {
	cc := c.Clone()
	cc.Version = ConfigVersion
	return json.MarshalIndent(cc, "", "  ")
}

// ParseConfig decodes a JSON config; name is used in error messages. Unknown fields and a
// newer version are rejected.
func ParseConfig(name string, data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	c := NewConfig()
	if err := dec.Decode(c); err != nil {
		if se, ok := err.(*json.SyntaxError); ok {
			line, col := lineCol(data, se.Offset)
			return nil, fmt.Errorf("%s:%d:%d: invalid config JSON: %v", name, line, col, err)
		}
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			line, col := lineCol(data, te.Offset)
			return nil, fmt.Errorf("%s:%d:%d: config field %q: expected %s, found a JSON %s", name, line, col, te.Field, jsonKind(te.Type), te.Value)
		}
		e := jsonerr.ExplainFor(name, data, err, c) // FILE:LINE:COL: unknown field "x" (allowed: ...)
		var je *jsonerr.Error
		if errors.As(e, &je) {
			je.Msg = "invalid config: " + je.Msg
		}
		return nil, e
	}
	if c.Version > ConfigVersion {
		return nil, fmt.Errorf("%s: config version %d is newer than this tool's %d", name, c.Version, ConfigVersion)
	}
	for _, o := range kinds {
		o.init(c) // a kind given as null
	}
	if c.OperandLayout == nil {
		c.OperandLayout = map[string][][]int{}
	}
	for k, f := range c.Flags {
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("%s: flags of kernel %s: %w", name, k, err)
		}
	}
	return c, nil
}

func lineCol(data []byte, off int64) (int, int) {
	line, col := 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// ReadConfig is ReadConfigContext under context.Background(): the default size limit, a
// read that cannot be interrupted.
func ReadConfig(path string) (*Config, error) { return ReadConfigContext(context.Background(), path) }

// ReadConfigContext reads a JSON config file, at most inputfile.Max(ctx,
// inputfile.ConfigJSON) bytes (64 MiB unless ctx carries --max-input-bytes); a read still
// waiting when ctx is cancelled (a FIFO) stops with an *inputfile.InterruptedError.
func ReadConfigContext(ctx context.Context, path string) (*Config, error) {
	data, err := inputfile.ReadFile(ctx, path, inputfile.ConfigJSON)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseConfig(path, data)
}

// ConfigFileKind is the kind of file `compile --out` and `tune --out` write, for the
// overwrite rule (internal/outpath): a file ParseConfig accepts.
func ConfigFileKind() outpath.Kind {
	return outpath.Kind{Name: "compiler config (JSON)", Is: func(path string, b []byte) bool {
		_, err := ParseConfig(path, b)
		return err == nil
	}}
}

// WriteConfig writes c to path atomically (a temporary file renamed into place).
func WriteConfig(path string, c *Config) error {
	data, err := c.MarshalIndent()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'))
}

// Store is the global config store: the best known choice per node key, consulted by
// candidate repair when a config has no entry for a node. Lookup returns the entry of
// kind k for the node whose structural key is key (NodeKey for layouts, EdgeKey for
// fusion edges, KernelKey for tiles and flags). Implementations must be safe for
// concurrent use.
type Store interface {
	Lookup(k Kind, key string) (Entry, bool)
}

// jsonKind describes a Go type as the JSON it decodes from ("an object whose values are
// an array of integers"), so that decoding errors do not leak Go type names.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Map:
		return "an object whose values are " + jsonKind(t.Elem())
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(jsonKind(t.Elem()))
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "a value"
}

// plural turns "an integer" into "integers", "an array of integers" into "arrays of
// integers".
func plural(kind string) string {
	kind = strings.TrimPrefix(strings.TrimPrefix(kind, "an "), "a ")
	if head, rest, ok := strings.Cut(kind, " of "); ok {
		return head + "s of " + rest
	}
	if kind == "true or false" {
		return "booleans"
	}
	return kind + "s"
}
