package hlo

// This file is XLA's HloSharding as the text format writes it (after
// xla/hlo/ir/hlo_sharding.cc, ToString and Validate, and the sharding grammar of
// xla/hlo/parser/hlo_parser.cc):
//
//	sharding   = "{" single "}" | "{" [ "{" single "}" { "," "{" single "}" } ] "}"   (tuple)
//	single     = "replicated" | "manual" | "unknown" | "maximal" "device=" int
//	           | "devices=" "[" ints "]" ( ints | "<=" "[" ints "]" [ "T" "(" ints ")" ] )
//	             [ "last_tile_dim_replicate" | "last_tile_dims=" "{" type { "," type } "}" ]
//	           | "mesh" ...                     (a named sharding: kept verbatim)
//	             followed by optional "metadata={...}", "shard_as N", "shard_like N"
//
// A tiled sharding splits dimension i of the array into TileDims[i] tiles; the
// dimensions after the array's rank are subgroups (replication or manual groups). Each
// device holds one tile whose size is the array's dimension ceil-divided by the tile
// count (HloSharding::TileShape).

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ShardingKind is the form of a sharding.
type ShardingKind int

// Sharding kinds.
const (
	ShardReplicated ShardingKind = iota // every device holds the whole array
	ShardMaximal                        // one device (Device) holds it
	ShardManual                         // the program is already per-device here (shard_map)
	ShardTiled                          // devices=[...]: tiles over the devices
	ShardTuple                          // one sharding per leaf of a tuple shape
	ShardUnknown                        // {unknown}: to be inferred by propagation
	ShardNamed                          // {mesh[...], ...}: kept verbatim (Raw)
)

// Sharding is an instruction's sharding= attribute (nil when absent). It is immutable
// once parsed: clones of an instruction share it.
type Sharding struct {
	Kind   ShardingKind
	Device int // ShardMaximal: the device

	// ShardTiled: the tile-assignment dimensions (the array's dimensions first, then
	// the subgroup dimensions), and the devices in row-major order of TileDims, either
	// listed (Devices) or as an iota reshaped to IotaDims and transposed by IotaPerm
	// ("<=[2,4]T(1,0)"; Devices nil).
	TileDims []int
	Devices  []int
	IotaDims []int
	IotaPerm []int
	// ReplicateLast marks "last_tile_dim_replicate": the last tile dimension is a group
	// of devices holding the same tile. SubgroupTypes are "last_tile_dims={...}": the
	// types (manual, replicated, ...) of the trailing subgroup dimensions.
	ReplicateLast bool
	SubgroupTypes []string

	Tuple []*Sharding // ShardTuple: the leaves' shardings, in order

	// Extras are "metadata={...}", "shard_as N" and "shard_like N", kept verbatim.
	Extras []string
	// Raw is a named sharding's text (ShardNamed), inside the braces.
	Raw string
	// Line and Col are where the sharding starts in the text it was parsed from (its
	// '{'; 0 for one built in Go), for errors about it found after parsing.
	Line, Col int
}

// Replicated returns a replicated sharding.
func Replicated() *Sharding { return &Sharding{Kind: ShardReplicated} }

// Tiled returns a tiled sharding with tile counts tiles over the iota of their product
// devices ("devices=[tiles]<=[n]").
func Tiled(tiles ...int) *Sharding {
	n := 1
	for _, t := range tiles {
		n *= t
	}
	return &Sharding{Kind: ShardTiled, TileDims: slices.Clone(tiles), IotaDims: []int{n}}
}

// NumDevices is the number of devices a tiled sharding's assignment names (the product
// of TileDims); 1 for a maximal sharding, 0 for the others.
func (s *Sharding) NumDevices() int {
	switch s.Kind {
	case ShardTiled:
		n := 1
		for _, d := range s.TileDims {
			n *= d
		}
		return n
	case ShardMaximal:
		return 1
	}
	return 0
}

// DataRank is the number of tile dimensions that tile the array (TileDims without the
// subgroup dimensions); 0 for a sharding that is not tiled.
func (s *Sharding) DataRank() int {
	if s.Kind != ShardTiled {
		return 0
	}
	r := len(s.TileDims) - len(s.SubgroupTypes)
	if s.ReplicateLast {
		r--
	}
	return r
}

// TileCounts returns the number of tiles along each of the array's dimensions (a copy);
// nil for a sharding that is not tiled.
func (s *Sharding) TileCounts() []int {
	if s.Kind != ShardTiled {
		return nil
	}
	return slices.Clone(s.TileDims[:s.DataRank()])
}

// IsManualSubgroup reports whether a tiled sharding has a manual subgroup dimension
// (last_tile_dims={manual, ...}): part of the program is already per-device there.
func (s *Sharding) IsManualSubgroup() bool {
	return s.Kind == ShardTiled && slices.Contains(s.SubgroupTypes, "manual")
}

// DeviceList returns the devices of a tiled sharding in row-major order of TileDims:
// the listed ones, or the iota reshaped to IotaDims, transposed by IotaPerm, flattened.
func (s *Sharding) DeviceList() []int {
	if s.Kind != ShardTiled {
		return nil
	}
	if s.Devices != nil {
		return slices.Clone(s.Devices)
	}
	dims := s.IotaDims
	n := 1
	for _, d := range dims {
		n *= d
	}
	perm := s.IotaPerm
	if perm == nil {
		perm = make([]int, len(dims))
		for i := range perm {
			perm[i] = i
		}
	}
	// Transposed dims and the strides of the source (iota) array.
	tdims := make([]int, len(perm))
	for i, p := range perm {
		tdims[i] = dims[p]
	}
	stride := make([]int, len(dims))
	acc := 1
	for i := len(dims) - 1; i >= 0; i-- {
		stride[i] = acc
		acc *= dims[i]
	}
	out := make([]int, 0, n)
	idx := make([]int, len(tdims))
	for range n {
		v := 0
		for i, p := range perm {
			v += idx[i] * stride[p]
		}
		out = append(out, v)
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < tdims[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// Leaves returns the sharding of each leaf of shape: a tuple sharding's elements, or
// this sharding for every leaf (a replicated, maximal or manual sharding of a tuple
// applies to all its leaves).
func (s *Sharding) Leaves(shape Shape) []*Sharding {
	if s.Kind == ShardTuple {
		return s.Tuple
	}
	n := leafCount(shape)
	out := make([]*Sharding, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func leafCount(s Shape) int {
	if !s.IsTuple() {
		return 1
	}
	n := 0
	for _, e := range s.Tuple {
		n += leafCount(e)
	}
	return n
}

// Check reports whether s fits an instruction of shape shape (HloSharding::Validate): a
// tiled sharding tiles exactly the array's rank and is not put on a tuple; a tuple
// sharding has one element per leaf of a tuple shape (on an array or token, as XLA
// writes them on an outfeed, it is not checked). Device ids are checked when parsed.
func (s *Sharding) Check(shape Shape) error {
	switch s.Kind {
	case ShardTuple:
		if !shape.IsTuple() {
			// XLA writes them on ops whose sharding is their operands' (outfeed on a
			// token, side-effecting custom-calls): nothing here to check it against.
			return nil
		}
		if n := leafCount(shape); n != len(s.Tuple) {
			return fmt.Errorf("a tuple sharding of %d elements on a tuple of %d leaves", len(s.Tuple), n)
		}
		leaves := flattenShape(shape)
		for i, e := range s.Tuple {
			if i < len(leaves) {
				if err := e.Check(leaves[i]); err != nil {
					return fmt.Errorf("tuple element %d: %w", i, err)
				}
			}
		}
	case ShardTiled:
		if shape.IsTuple() {
			return fmt.Errorf("a tiled sharding %s on the tuple %s (want one sharding per element: {{...}, ...})", s, shape)
		}
		if r := s.DataRank(); r != shape.Rank() {
			return fmt.Errorf("sharding %s tiles %d dimensions, but %s has rank %d", s, r, shape, shape.Rank())
		}
	}
	return nil
}

func flattenShape(s Shape) []Shape {
	if !s.IsTuple() {
		return []Shape{s}
	}
	var out []Shape
	for _, e := range s.Tuple {
		out = append(out, flattenShape(e)...)
	}
	return out
}

// String writes s as XLA does ("{devices=[1,8]<=[8]}", "{replicated}", ...).
func (s *Sharding) String() string {
	var b strings.Builder
	s.write(&b)
	return b.String()
}

func (s *Sharding) write(b *strings.Builder) {
	if s.Kind == ShardTuple {
		b.WriteByte('{')
		for i, e := range s.Tuple {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte('}')
		return
	}
	b.WriteByte('{')
	switch s.Kind {
	case ShardReplicated:
		b.WriteString("replicated")
	case ShardManual:
		b.WriteString("manual")
	case ShardUnknown:
		b.WriteString("unknown")
	case ShardMaximal:
		b.WriteString("maximal device=")
		b.WriteString(strconv.Itoa(s.Device))
	case ShardNamed:
		b.WriteString(s.Raw)
	case ShardTiled:
		b.WriteString("devices=")
		writeIntsIn(b, "[", s.TileDims, "]")
		if s.Devices != nil {
			writeInts(b, s.Devices)
		} else {
			writeIntsIn(b, "<=[", s.IotaDims, "]")
			if s.IotaPerm != nil {
				writeIntsIn(b, "T(", s.IotaPerm, ")")
			}
		}
		if s.ReplicateLast {
			b.WriteString(" last_tile_dim_replicate")
		}
		if len(s.SubgroupTypes) > 0 {
			b.WriteString(" last_tile_dims={")
			b.WriteString(strings.Join(s.SubgroupTypes, ", "))
			b.WriteByte('}')
		}
	}
	for _, e := range s.Extras {
		b.WriteByte(' ')
		b.WriteString(e)
	}
	b.WriteByte('}')
}

func writeIntsIn(b *strings.Builder, open string, xs []int, close string) {
	b.WriteString(open)
	writeInts(b, xs)
	b.WriteString(close)
}

// intsIn is xs as HLO text writes them between open and close: "[2,4]", "(1,0)".
func intsIn(open string, xs []int, close string) string {
	var b strings.Builder
	writeIntsIn(&b, open, xs, close)
	return b.String()
}

// deviceCount is the product of a sharding's dimensions (form names them in a message:
// "devices=[2,4]", "<=[8]"), refused at pos when one is not positive or the product
// exceeds maxShardDevices.
func (p *parser) deviceCount(pos int, dims []int, what, form string) (int, error) {
	n := 1
	for _, d := range dims {
		if d <= 0 {
			return 0, p.errAt(pos, "sharding: %s %d is not positive", what, d)
		}
		n *= d
		if n > maxShardDevices {
			return 0, p.errAt(pos, "sharding: %s names more than %d devices", form, maxShardDevices)
		}
	}
	return n, nil
}

// maxShardDevices bounds the devices a sharding may name, so that hostile input cannot
// make DeviceList allocate without limit (XLA's largest meshes are tens of thousands).
const maxShardDevices = 1 << 20

// subgroupTypes are the types last_tile_dims may list (OpSharding::Type names as
// hlo_sharding.cc prints them).
var subgroupTypes = []string{"manual", "replicated", "maximal", "unreduced"}

// sharding reads a sharding attribute's value at p.off; shape, when known, is the
// instruction's result shape the sharding must fit (Sharding.Check).
func (p *parser) sharding(shape *Shape) (*Sharding, error) {
	p.skipSpace()
	start := p.off
	s, err := p.shardingValue(0)
	if err != nil {
		return nil, err
	}
	if shape != nil {
		if err := s.Check(*shape); err != nil {
			return nil, p.errAt(start, "sharding: %v", err)
		}
	}
	return s, nil
}

func (p *parser) shardingValue(depth int) (*Sharding, error) {
	if depth > 1 {
		return nil, p.errAt(p.off, "sharding: a tuple sharding nested in a tuple sharding")
	}
	p.skipSpace()
	start := p.off
	line, col := p.lineCol(start)
	if err := p.expect('{', "to start a sharding"); err != nil {
		return nil, err
	}
	if p.peek() == '{' || p.peek() == '}' { // a tuple sharding (possibly empty)
		t := &Sharding{Kind: ShardTuple, Tuple: []*Sharding{}, Line: line, Col: col}
		if p.accept('}') {
			return t, nil
		}
		for {
			e, err := p.shardingValue(depth + 1)
			if err != nil {
				return nil, err
			}
			t.Tuple = append(t.Tuple, e)
			if p.accept(',') {
				continue
			}
			if err := p.expect('}', "to end a tuple sharding"); err != nil {
				return nil, err
			}
			return t, nil
		}
	}
	s := &Sharding{Line: line, Col: col, Kind: -1}
	setKind := func(k ShardingKind, pos int, word string) error {
		if s.Kind >= 0 {
			return p.errAt(pos, "sharding: %q after a sharding form was already given", word)
		}
		s.Kind = k
		return nil
	}
	for !p.accept('}') {
		if p.off >= len(p.src) {
			return nil, p.errAt(p.off, "sharding: expected '}' to end the sharding, found end of input")
		}
		p.skipSpace()
		pos := p.off
		word := p.run(isKeyChar)
		switch word {
		case "replicated":
			if err := setKind(ShardReplicated, pos, word); err != nil {
				return nil, err
			}
		case "manual":
			if err := setKind(ShardManual, pos, word); err != nil {
				return nil, err
			}
		case "unknown":
			if err := setKind(ShardUnknown, pos, word); err != nil {
				return nil, err
			}
		case "maximal":
			if err := setKind(ShardMaximal, pos, word); err != nil {
				return nil, err
			}
			s.Device = -1
		case "device":
			if err := p.expect('=', "after device"); err != nil {
				return nil, err
			}
			v, _, err := p.integer("device id", false)
			if err != nil {
				return nil, err
			}
			if s.Kind != ShardMaximal {
				return nil, p.errAt(pos, "sharding: device= is only valid after maximal")
			}
			s.Device = v
		case "devices":
			if err := setKind(ShardTiled, pos, word); err != nil {
				return nil, err
			}
			if err := p.expect('=', "after devices"); err != nil {
				return nil, err
			}
			if err := p.tileAssignment(s); err != nil {
				return nil, err
			}
		case "last_tile_dim_replicate":
			if s.Kind != ShardTiled {
				return nil, p.errAt(pos, "sharding: last_tile_dim_replicate without devices=[...]")
			}
			s.ReplicateLast = true
		case "last_tile_dims":
			if s.Kind != ShardTiled {
				return nil, p.errAt(pos, "sharding: last_tile_dims without devices=[...]")
			}
			if err := p.expect('=', "after last_tile_dims"); err != nil {
				return nil, err
			}
			if err := p.expect('{', "to start last_tile_dims"); err != nil {
				return nil, err
			}
			for {
				p.skipSpace()
				tpos := p.off
				t := p.run(isKeyChar)
				if t == "replicate" { // the spelling of some XLA comments
					t = "replicated"
				}
				if !slices.Contains(subgroupTypes, t) {
					return nil, p.errAt(tpos, "sharding: expected a subgroup type (%s) in last_tile_dims, found %s", strings.Join(subgroupTypes, ", "), p.foundAt(tpos))
				}
				s.SubgroupTypes = append(s.SubgroupTypes, t)
				if p.accept(',') {
					continue
				}
				if err := p.expect('}', "to end last_tile_dims"); err != nil {
					return nil, err
				}
				break
			}
		case "metadata":
			if err := p.expect('=', "after metadata"); err != nil {
				return nil, err
			}
			gs := p.off
			if p.peek() != '{' {
				return nil, p.errAt(p.off, "sharding: expected '{' after metadata=, found %s", p.found())
			}
			if _, err := p.skipGroup(); err != nil {
				return nil, err
			}
			s.Extras = append(s.Extras, "metadata="+normalize(p.src[gs:p.off]))
		case "shard_as", "shard_like":
			v, _, err := p.integer(word+" group id", false)
			if err != nil {
				return nil, err
			}
			s.Extras = append(s.Extras, word+" "+strconv.Itoa(v))
		case "mesh":
			if s.Kind >= 0 {
				return nil, p.errAt(pos, "sharding: a named sharding after a sharding form was already given")
			}
			// A named sharding (mesh['a'=2,...], [{'a'}, {}]): kept verbatim up to the
			// brace that closes it.
			p.off = pos
			for p.off < len(p.src) && p.src[p.off] != '}' {
				switch p.src[p.off] {
				case '[', '{', '(':
					if _, err := p.skipGroup(); err != nil {
						return nil, err
					}
				case '"':
					if err := p.skipString(); err != nil {
						return nil, err
					}
				default:
					p.off++
				}
			}
			s.Kind, s.Raw = ShardNamed, strings.TrimSpace(normalize(p.src[pos:p.off]))
		case "":
			return nil, p.errAt(pos, "sharding: expected replicated, maximal, manual, devices=, last_tile_dim_replicate, last_tile_dims= or '}', found %s", p.found())
		default:
			return nil, p.errAt(pos, "sharding: unknown word %q (want replicated, maximal, manual, unknown, devices=, last_tile_dim_replicate, last_tile_dims=, metadata=)", word)
		}
	}
	switch s.Kind {
	case -1:
		return nil, p.errAt(start, "sharding: empty sharding {} on a single value (want replicated, maximal, manual or devices=)")
	case ShardMaximal:
		if s.Device < 0 {
			return nil, p.errAt(start, "sharding: maximal without device=N")
		}
	case ShardTiled:
		if s.ReplicateLast && len(s.SubgroupTypes) > 0 {
			return nil, p.errAt(start, "sharding: both last_tile_dim_replicate and last_tile_dims")
		}
		if s.DataRank() < 0 {
			return nil, p.errAt(start, "sharding: devices=%s has fewer dimensions than its subgroups", intsIn("[", s.TileDims, "]"))
		}
	}
	return s, nil
}

// foundAt describes the token at off (see found).
func (p *parser) foundAt(off int) string {
	save := p.off
	p.off = off
	f := p.found()
	p.off = save
	return f
}

// tileAssignment reads "[dims]" then a device list or "<=[dims]" with an optional
// "T(perm)", and checks that the devices fill the dimensions exactly once each.
func (p *parser) tileAssignment(s *Sharding) error {
	p.skipSpace()
	start := p.off
	dims, err := p.bracketInts('[', ']', "tile assignment dimensions")
	if err != nil {
		return err
	}
	if len(dims) == 0 {
		return p.errAt(start, "sharding: devices=[] has no dimensions")
	}
	n, err := p.deviceCount(start, dims, "tile assignment dimension", "devices="+intsIn("[", dims, "]"))
	if err != nil {
		return err
	}
	s.TileDims = dims
	p.skipSpace()
	lpos := p.off
	if p.off+1 < len(p.src) && p.src[p.off] == '<' && p.src[p.off+1] == '=' {
		p.off += 2
		idims, err := p.bracketInts('[', ']', "iota dimensions")
		if err != nil {
			return err
		}
		m, err := p.deviceCount(lpos, idims, "iota dimension", "<="+intsIn("[", idims, "]"))
		if err != nil {
			return err
		}
		if m != n {
			return p.errAt(lpos, "sharding: devices=%s needs %d devices, but <=%s gives %d", intsIn("[", dims, "]"), n, intsIn("[", idims, "]"), m)
		}
		s.IotaDims = idims
		if p.peek() == 'T' {
			tpos := p.off
			p.off++
			perm, err := p.bracketInts('(', ')', "iota transpose")
			if err != nil {
				return err
			}
			if !isPermutation(perm, len(idims)) {
				return p.errAt(tpos, "sharding: T%s is not a permutation of the %d iota dimensions", intsIn("(", perm, ")"), len(idims))
			}
			s.IotaPerm = perm
		}
		return nil
	}
	var devs []int
	seen := map[int]bool{}
	for {
		v, pos, err := p.integer("device id (or <=[...])", false)
		if err != nil {
			return err
		}
		if seen[v] {
			return p.errAt(pos, "sharding: device %d appears twice in the tile assignment", v)
		}
		if len(devs) == n {
			return p.errAt(pos, "sharding: devices=%s needs %d devices, but more are listed", intsIn("[", dims, "]"), n)
		}
		seen[v] = true
		devs = append(devs, v)
		save := p.off
		if p.accept(',') && isDigit(p.peek()) {
			continue
		}
		p.off = save
		break
	}
	if len(devs) != n {
		return p.errAt(lpos, "sharding: devices=%s needs %d devices, but %d are listed", intsIn("[", dims, "]"), n, len(devs))
	}
	s.Devices = devs
	return nil
}

func isPermutation(perm []int, n int) bool {
	if len(perm) != n {
		return false
	}
	seen := make([]bool, n)
	for _, x := range perm {
		if x < 0 || x >= n || seen[x] {
			return false
		}
		seen[x] = true
	}
	return true
}

// bracketInts reads open int {"," int} close.
func (p *parser) bracketInts(open, close byte, what string) ([]int, error) {
	if err := p.expect(open, "to start "+what); err != nil {
		return nil, err
	}
	var out []int
	if p.accept(close) {
		return []int{}, nil
	}
	for {
		v, _, err := p.integer(what, true)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.accept(',') {
			continue
		}
		if err := p.expect(close, "to end "+what); err != nil {
			return nil, err
		}
		return out, nil
	}
}
