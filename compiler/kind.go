package compiler

import (
	"slices"
	"sort"

	"github.com/tpucost/tpucost/compiler/cost"
)

// Entry is the value of one config entry of some kind: the field of its kind holds it
// (Layout: a minor-to-major order; Fusion: fuse the producer or not; Tile; Flags;
// Staging: stage the edge or not). It is
// how Config, Space and Store exchange choices without a method per kind.
type Entry struct {
	Layout []int      `json:"layout,omitempty"`
	Fusion bool       `json:"fusion,omitempty"`
	Tile   cost.Tile  `json:"tile,omitempty"`
	Flags  cost.Flags `json:"flags"`
	// Staging: keep the producer's output in VMEM for the consumer (a staging edge).
	Staging bool `json:"staging,omitempty"`
}

// Node is one configurable node of a Space, whatever its kind: its place in the Space's
// list of that kind, the name of its config entry (instruction name, edge name or kernel
// key), its store key, its number of options and the one chosen. Options are indexed as
// the Space lists them; a fusion edge has two, 0 (do not fuse) and 1 (fuse), and so has a
// staging edge, 0 (through HBM) and 1 (staged in VMEM).
type Node struct {
	Kind    Kind
	Index   int
	Name    string
	Key     string
	Options int
	Chosen  int
}

// kindOps is what the config machinery knows about one kind: its entries in a Config and
// its nodes in a Space. kinds holds one per Kind, in pipeline order; Config, Space,
// Perturb, candidate repair and the tuner's search space go through it instead of
// repeating themselves per kind.
type kindOps interface {
	kind() Kind
	// relative: the kind's choices are compared within one kernel (Kind.Relative).
	relative() bool
	// Config entries.
	get(c *Config, name string) (Entry, bool)
	set(c *Config, name string, e Entry) // stores a copy
	names(c *Config) []string            // unordered
	size(c *Config) int
	init(c *Config) // makes the kind's map when nil
	// Space nodes.
	nodes(s *Space) []Node
	option(s *Space, n Node, i int) Entry
}

// entries implements the Config half of kindOps for a kind whose entries are a
// map[string]V field of Config.
type entries[V any] struct {
	k       Kind
	m       func(c *Config) *map[string]V
	clone   func(V) V
	toEntry func(V) Entry
	of      func(Entry) V
}

func (e entries[V]) kind() Kind { return e.k }

func (e entries[V]) get(c *Config, name string) (Entry, bool) {
	v, ok := (*e.m(c))[name]
	if !ok {
		return Entry{}, false
	}
	return e.toEntry(v), true
}

func (e entries[V]) set(c *Config, name string, x Entry) {
	m := e.m(c)
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[name] = e.clone(e.of(x))
}

func (e entries[V]) names(c *Config) []string {
	m := *e.m(c)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (e entries[V]) size(c *Config) int { return len(*e.m(c)) }

func (e entries[V]) init(c *Config) {
	if m := e.m(c); *m == nil {
		*m = map[string]V{}
	}
}

func identity[V any](v V) V { return v }

// layoutKind, fusionKind, tileKind and flagsKind are the four kinds' operations.
type (
	layoutKind  struct{ entries[[]int] }
	fusionKind  struct{ entries[bool] }
	tileKind    struct{ entries[cost.Tile] }
	flagsKind   struct{ entries[cost.Flags] }
	stagingKind struct{ entries[bool] }
)

func (layoutKind) relative() bool  { return false }
func (fusionKind) relative() bool  { return false }
func (tileKind) relative() bool    { return true }
func (flagsKind) relative() bool   { return true }
func (stagingKind) relative() bool { return false }

func (stagingKind) nodes(s *Space) []Node {
	out := make([]Node, len(s.Staging))
	for i, c := range s.Staging {
		out[i] = Node{Kind: KindStaging, Index: i, Name: c.Name, Key: c.Key, Options: 2, Chosen: b2i(c.Chosen)}
	}
	return out
}

func (stagingKind) option(_ *Space, _ Node, i int) Entry { return Entry{Staging: i == 1} }

func (layoutKind) nodes(s *Space) []Node {
	out := make([]Node, len(s.Layout))
	for i, c := range s.Layout {
		out[i] = Node{Kind: KindLayout, Index: i, Name: c.Name, Key: c.Key, Options: len(c.Options), Chosen: c.Chosen}
	}
	return out
}

func (layoutKind) option(s *Space, n Node, i int) Entry {
	return Entry{Layout: slices.Clone(s.Layout[n.Index].Options[i])}
}

func (fusionKind) nodes(s *Space) []Node {
	out := make([]Node, len(s.Fusion))
	for i, c := range s.Fusion {
		out[i] = Node{Kind: KindFusion, Index: i, Name: c.Name, Key: c.Key, Options: 2, Chosen: b2i(c.Chosen)}
	}
	return out
}

func (fusionKind) option(_ *Space, _ Node, i int) Entry { return Entry{Fusion: i == 1} }

func (tileKind) nodes(s *Space) []Node {
	out := make([]Node, len(s.Tile))
	for i, c := range s.Tile {
		out[i] = Node{Kind: KindTile, Index: i, Name: c.Key, Key: c.Key, Options: len(c.Options), Chosen: c.Chosen}
	}
	return out
}

func (tileKind) option(s *Space, n Node, i int) Entry {
	return Entry{Tile: slices.Clone(s.Tile[n.Index].Options[i])}
}

func (flagsKind) nodes(s *Space) []Node {
	out := make([]Node, len(s.Flags))
	for i, c := range s.Flags {
		out[i] = Node{Kind: KindFlags, Index: i, Name: c.Key, Key: c.Key, Options: len(c.Options), Chosen: c.Chosen}
	}
	return out
}

func (flagsKind) option(s *Space, n Node, i int) Entry {
	return Entry{Flags: s.Flags[n.Index].Options[i]}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// kinds is the registry of config kinds: every kind's operations, in pipeline order.
// Kinds, and through it every help text and message that lists the kinds, derive from it, so
// a new kind is one entry here (and its Config field). It is never modified.
var kinds = []kindOps{
	layoutKind{entries[[]int]{k: KindLayout, m: func(c *Config) *map[string][]int { return &c.Layout },
		clone: slices.Clone[[]int], toEntry: func(v []int) Entry { return Entry{Layout: v} }, of: func(e Entry) []int { return e.Layout }}},
	fusionKind{entries[bool]{k: KindFusion, m: func(c *Config) *map[string]bool { return &c.Fusion },
		clone: identity[bool], toEntry: func(v bool) Entry { return Entry{Fusion: v} }, of: func(e Entry) bool { return e.Fusion }}},
	tileKind{entries[cost.Tile]{k: KindTile, m: func(c *Config) *map[string]cost.Tile { return &c.Tile },
		clone: slices.Clone[cost.Tile], toEntry: func(v cost.Tile) Entry { return Entry{Tile: v} }, of: func(e Entry) cost.Tile { return e.Tile }}},
	flagsKind{entries[cost.Flags]{k: KindFlags, m: func(c *Config) *map[string]cost.Flags { return &c.Flags },
		clone: identity[cost.Flags], toEntry: func(v cost.Flags) Entry { return Entry{Flags: v} }, of: func(e Entry) cost.Flags { return e.Flags }}},
	stagingKind{entries[bool]{k: KindStaging, m: func(c *Config) *map[string]bool { return &c.Staging },
		clone: identity[bool], toEntry: func(v bool) Entry { return Entry{Staging: v} }, of: func(e Entry) bool { return e.Staging }}},
}

// ops returns kind k's operations, found in the registry kinds; it panics on a kind that
// is not one of Kinds.
func ops(k Kind) kindOps {
	for _, o := range kinds {
		if o.kind() == k {
			return o
		}
	}
	panic("compiler: unknown config kind " + string(k))
}

// Get returns the entry of kind k named name, if c has one. Its slices are the config's:
// do not modify them (Set stores a copy).
func (c *Config) Get(k Kind, name string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	return ops(k).get(c, name)
}

// Set sets the entry of kind k named name to (a copy of) e's field of that kind.
func (c *Config) Set(k Kind, name string, e Entry) { ops(k).set(c, name, e) }

// Names lists the names of c's entries of kind k, sorted.
func (c *Config) Names(k Kind) []string {
	if c == nil {
		return nil
	}
	out := ops(k).names(c)
	sort.Strings(out)
	return out
}

// Nodes lists the configurable nodes of kind k, in the Space's order.
func (s *Space) Nodes(k Kind) []Node { return ops(k).nodes(s) }

// Option returns option i of node n (of this Space) as an entry of n's kind.
func (s *Space) Option(n Node, i int) Entry { return ops(n.Kind).option(s, n, i) }
