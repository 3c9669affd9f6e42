package hlo

// This file is the reader of XLA's HLO text format (a real subset of what
// xla/hlo/parser/hlo_parser.cc accepts):
//
//	module      = "HloModule" name [ ":" ] { "," key "=" raw } { table } { computation }
//	            | computation { computation }   (no header, as XLA reads it: the text starts
//	                                             with ENTRY or a name and "{"; named module_ENTRY)
//	table       = ( "FileNames" | "FunctionNames" ) { int string }
//	            | ( "FileLocations" | "StackFrames" ) { int "{" { key "=" int } "}" }
//	computation = [ "ENTRY" ] name [ "(" [ param { "," param } ] ")" "->" shape ] "{" { instr } "}"
//	              { "," key "=" raw }
//	param       = name ":" shape
//	instr       = [ "ROOT" ] name "=" [ shape ] opcode "(" payload ")" { "," key "=" value }
//	payload     = int                      (parameter)
//	            | literal                  (constant)
//	            | [ operand { "," operand } ]
//	operand     = [ shape ] name
//	shape       = elem "[" [ dim { "," dim } ] "]" [ layout ] | "(" [ shape { "," shape } ] ")"
//	dim         = int | "<=" int | "?"          (static, bounded dynamic, unbounded dynamic)
//	layout      = "{" [ int { "," int } ] [ ":" "T" "(" ints ")" { [ "T" ] "(" ints ")" } ] "}"
//	name        = [ "%" ] namechar { namechar }       namechar = letter | digit | "." | "_" | "-"
//
// Whitespace, /* block */ and // line comments may appear between any two tokens.

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tpucost/tpucost/internal/inputfile"
)

// opcodeByName and elemByName are read-only lookup tables for the parser.
var (
	opcodeByName = func() map[string]Opcode {
		m := make(map[string]Opcode, len(opTable))
		for _, op := range AllOpcodes() {
			m[op.String()] = op
		}
		return m
	}()
	elemByName = func() map[string]ElemType {
		m := make(map[string]ElemType, len(elemNames))
		for i := range elemNames {
			if t := ElemType(i); t != Invalid && t != TupleType {
				m[t.String()] = t
			}
		}
		return m
	}()
)

// maxNesting bounds the nesting depth of tuple shapes, constant literals, nested
// instructions and inline computations, so that hostile input cannot exhaust the stack
// (XLA's parser bounds its recursion too, at 8192; real dumps nest a few levels).
const maxNesting = 100

// ParseError is a syntax or semantic error in HLO text, with the 1-based line and
// column (in bytes) where it was found.
type ParseError struct {
	File      string
	Line, Col int
	Msg       string

	cause error // the underlying error, if any (see Unwrap)
}

// Error returns "file:line:col: msg".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Unwrap returns the error this one was derived from (a shape-inference error), or nil.
func (e *ParseError) Unwrap() error { return e.cause }

// ParseFile is ParseFileContext under context.Background(): the default size limit, a
// read that cannot be interrupted.
func ParseFile(path string) (*Module, error) { return ParseFileContext(context.Background(), path) }

// ParseFileContext reads and parses the HLO text file at path (see Parse). The file may
// hold at most inputfile.Max(ctx, inputfile.HLOText) bytes (256 MiB unless ctx carries
// --max-input-bytes); a larger one is an *inputfile.TooLargeError, and a read still
// waiting when ctx is cancelled (a FIFO) an *inputfile.InterruptedError. Errors reading
// the file are returned wrapped; errors in its text are *ParseError.
func ParseFileContext(ctx context.Context, path string) (*Module, error) {
	src, err := inputfile.ReadFile(ctx, path, inputfile.HLOText)
	if err != nil {
		return nil, fmt.Errorf("hlo: %w", err)
	}
	return Parse(path, src)
}

// Parse parses an HLO module in XLA's text format. filename is used only in error
// messages. Any error is a *ParseError whose position points at the offending token.
//
// The returned module is resolved and checked: operands may be used before they are
// defined within a computation, and instructions are reordered topologically (keeping
// the written order where it is already valid); undefined operands, dependency cycles,
// unknown or recursively called computations, names defined twice in one computation
// (names are scoped per computation), malformed parameter numbers, arrays larger than
// MaxArrayBytes and declared shapes that disagree with InferShape (float precision may
// differ, as XLA allows) are errors. As in XLA, a computation without ROOT returns its
// last instruction, a module without ENTRY runs its last computation, an omitted result
// shape is inferred, and a parameter list that disagrees with the body in length is
// ignored. JAX's stack-frame tables go to Module.StackFrames. Computations
// come callees before callers; those called by fusion instructions have IsFusion set.
// sharding= is parsed into Instruction.Sharding (a malformed one is an error at its
// position). Comments, the types written on operands and frontend_attributes= are
// dropped; all other unknown attributes are kept verbatim in Instruction.Extra.
// Parse never panics.
func Parse(filename string, src []byte) (*Module, error) {
	p := &parser{
		file:       filename,
		src:        src,
		compByName: map[string]int{},
		instrDefs:  map[string]int{},
	}
	return p.parseModule()
}

type parser struct {
	file   string
	src    []byte
	off    int
	lexErr *ParseError // an unterminated comment; every later error reports it instead

	comps      []*compState
	compByName map[string]int // computation name -> index in comps
	instrDefs  map[string]int // instruction name -> offset of its first definition in any computation
	lineStarts []int          // offsets of the lines' starts (fastLineCol), built on first use
	refs       []compRef      // called-computation references, in text order
	entry      *compState
	cur        int // index in comps of the computation being read
	nest       int // nested instructions and inline computations open around p.off
}

// opRef is an operand reference awaiting resolution.
type opRef struct {
	name    string
	pos     int
	typed   *Shape // the shape written before the name, if any
	typePos int
	idx     int // resolved index in the computation's written order
}

type pendingInstr struct {
	in       *Instruction
	pos      int // offset of the instruction's name
	ops      []opRef
	noShape  bool // the result shape was omitted: inferred in finish
	shapePos int
}

// Called-computation slots of an instruction.
const (
	slotToApply = iota
	slotCalls
	slotCondition
	slotBody
)

type compRef struct {
	in   *Instruction
	comp int // index of the computation containing in
	slot int
	name string
	pos  int
}

type sigParam struct {
	pos   int
	shape Shape
}

type compState struct {
	comp     *Computation
	pos      int
	inline   bool            // written inline as an attribute's value ("to_apply={...}"), not top level
	defs     map[string]int  // instruction name -> offset of its definition
	anon     map[string]bool // the names in defs generated for nested instructions (anonName)
	instrs   []pendingInstr
	root     int   // index in instrs, -1 if none
	order    []int // instrs indices in topological order
	paramIdx []int // instrs index by parameter number
	hasSig   bool
	sigPos   int
	params   []sigParam
	ret      Shape
	retPos   int
	closePos int
}

// ---------------------------------------------------------------------------------
// Positions and errors.

func (p *parser) lineCol(off int) (line, col int) {
	off = min(max(off, 0), len(p.src))
	line = 1 + bytes.Count(p.src[:off], []byte{'\n'})
	start := bytes.LastIndexByte(p.src[:off], '\n') + 1
	return line, off - start + 1
}

// fastLineCol is lineCol through an index of line starts built on first use, for the
// position of every instruction (lineCol counts from the start, fine for one error).
func (p *parser) fastLineCol(off int) (line, col int) {
	if p.lineStarts == nil {
		p.lineStarts = []int{0}
		for i, c := range p.src {
			if c == '\n' {
				p.lineStarts = append(p.lineStarts, i+1)
			}
		}
	}
	off = min(max(off, 0), len(p.src))
	i, found := slices.BinarySearch(p.lineStarts, off)
	if !found {
		i--
	}
	return i + 1, off - p.lineStarts[i] + 1
}

func (p *parser) posString(off int) string {
	l, c := p.lineCol(off)
	return fmt.Sprintf("%d:%d", l, c)
}

// errAt returns a *ParseError at byte offset off (or the pending scanner error).
func (p *parser) errAt(off int, format string, args ...any) error {
	if p.lexErr != nil {
		return p.lexErr
	}
	return p.newErr(off, nil, format, args...)
}

func (p *parser) newErr(off int, cause error, format string, args ...any) *ParseError {
	line, col := p.lineCol(off)
	return &ParseError{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), cause: cause}
}

// found describes the token at p.off for "expected X, found Y" messages.
func (p *parser) found() string {
	if p.off >= len(p.src) {
		return "end of input"
	}
	c := p.src[p.off]
	switch {
	case isNameChar(c) || c == '%':
		end := p.off + 1
		for end < len(p.src) && isNameChar(p.src[end]) && end-p.off < 32 {
			end++
		}
		return strconv.Quote(string(p.src[p.off:end]))
	case c == '\n':
		return "newline"
	case isSpace(c):
		return "space"
	case c >= 0x20 && c < 0x7f:
		return "'" + string(c) + "'"
	}
	r, _ := utf8.DecodeRune(p.src[p.off:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte %#x", c)
	}
	return strconv.QuoteRune(r)
}

// ---------------------------------------------------------------------------------
// Scanning.

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isLetter(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isNameChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '.' || c == '_' || c == '-' }
func isKeyChar(c byte) bool  { return isLetter(c) || isDigit(c) || c == '_' }
func isLitChar(c byte) bool  { return isNameChar(c) || c == '+' }

// skipSpace skips whitespace and comments. An unterminated /* comment records a sticky
// error and moves to the end of the input.
func (p *parser) skipSpace() {
	for p.off < len(p.src) {
		c := p.src[p.off]
		switch {
		case isSpace(c):
			p.off++
		case c == '/' && p.off+1 < len(p.src) && p.src[p.off+1] == '*':
			end := bytes.Index(p.src[p.off+2:], []byte("*/"))
			if end < 0 {
				if p.lexErr == nil {
					p.lexErr = p.newErr(p.off, nil, "unterminated comment: expected \"*/\", found end of input")
				}
				p.off = len(p.src)
				return
			}
			p.off += 2 + end + 2
		case c == '/' && p.off+1 < len(p.src) && p.src[p.off+1] == '/':
			nl := bytes.IndexByte(p.src[p.off:], '\n')
			if nl < 0 {
				p.off = len(p.src)
			} else {
				p.off += nl + 1
			}
		default:
			return
		}
	}
}

// peek skips space and returns the next byte, or 0 at the end of the input.
func (p *parser) peek() byte {
	p.skipSpace()
	if p.off < len(p.src) {
		return p.src[p.off]
	}
	return 0
}

// accept consumes c if it is the next token.
func (p *parser) accept(c byte) bool {
	if p.peek() == c && p.off < len(p.src) {
		p.off++
		return true
	}
	return false
}

// expect consumes c or fails with "expected 'c' <context>, found ...".
func (p *parser) expect(c byte, context string) error {
	if p.accept(c) {
		return nil
	}
	return p.errAt(p.off, "expected '%c' %s, found %s", c, context, p.found())
}

// atKeyword reports whether the next token is the word kw (not a prefix of a name).
func (p *parser) atKeyword(kw string) bool {
	p.skipSpace()
	end := p.off + len(kw)
	return end <= len(p.src) && string(p.src[p.off:end]) == kw &&
		(end == len(p.src) || !isNameChar(p.src[end]))
}

// run consumes the longest run of bytes satisfying ok, without skipping space first.
func (p *parser) run(ok func(byte) bool) string {
	start := p.off
	for p.off < len(p.src) && ok(p.src[p.off]) {
		p.off++
	}
	return string(p.src[start:p.off])
}

// name reads a name with an optional leading '%'; what names it in errors.
// moduleName reads the module's name: a name that may also carry '@' and '=' (a zoo
// model built at a shape is named "bert_tiny_s128_b32@seq=64").
func (p *parser) moduleName() (string, error) {
	p.skipSpace()
	if p.off < len(p.src) && p.src[p.off] == '%' {
		p.off++
	}
	i := p.off
	for i < len(p.src) && (isNameChar(p.src[i]) || p.src[i] == '@' || p.src[i] == '=') {
		i++
	}
	if i == p.off {
		return "", p.errAt(i, "expected module name, found %s", p.found())
	}
	name := string(p.src[p.off:i])
	p.off = i
	return name, nil
}

func (p *parser) name(what string) (string, int, error) {
	p.skipSpace()
	start := p.off
	i := p.off
	if i < len(p.src) && p.src[i] == '%' {
		i++
	}
	j := i
	for j < len(p.src) && isNameChar(p.src[j]) {
		j++
	}
	if j == i {
		p.off = i
		return "", start, p.errAt(i, "expected %s, found %s", what, p.found())
	}
	p.off = j
	return string(p.src[i:j]), start, nil
}

// integer reads a decimal integer, signed if allowed.
func (p *parser) integer(what string, signed bool) (int, int, error) {
	p.skipSpace()
	start := p.off
	i := p.off
	if signed && i < len(p.src) && (p.src[i] == '-' || p.src[i] == '+') {
		i++
	}
	j := i
	for j < len(p.src) && isDigit(p.src[j]) {
		j++
	}
	if j == i {
		return 0, start, p.errAt(start, "expected %s, found %s", what, p.found())
	}
	text := string(p.src[start:j])
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, start, p.errAt(start, "%s %s is out of range", what, text)
	}
	p.off = j
	return v, start, nil
}

// intList reads "{a,b,...}" (possibly empty); the result is never nil.
func (p *parser) intList(what string) ([]int, error) {
	if !p.accept('{') {
		return nil, p.errAt(p.off, "expected '{' to start %s, found %s", what, p.found())
	}
	out := []int{}
	if p.accept('}') {
		return out, nil
	}
	for {
		v, _, err := p.integer("integer", true)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.accept(',') {
			continue
		}
		if !p.accept('}') {
			return nil, p.errAt(p.off, "expected ',' or '}' in %s, found %s", what, p.found())
		}
		return out, nil
	}
}

// skipString moves past the double-quoted string at p.off (backslash escapes allowed).
func (p *parser) skipString() error {
	start := p.off
	for i := p.off + 1; i < len(p.src); i++ {
		switch p.src[i] {
		case '\\':
			i++
		case '"':
			p.off = i + 1
			return nil
		}
	}
	return p.errAt(start, "unterminated string: expected '\"', found end of input")
}

func closerOf(c byte) byte {
	switch c {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// commentLen returns the length of the comment starting at text[i], or 0 if none
// starts there, or -1 for an unterminated /* comment. A // comment runs to the end of
// its line (the newline excluded).
func commentLen(text []byte, i int) int {
	if text[i] != '/' || i+1 >= len(text) {
		return 0
	}
	switch text[i+1] {
	case '*':
		end := bytes.Index(text[i+2:], []byte("*/"))
		if end < 0 {
			return -1
		}
		return end + 4
	case '/':
		end := bytes.IndexByte(text[i:], '\n')
		if end < 0 {
			return len(text) - i
		}
		return end
	}
	return 0
}

// skipGroup moves past the bracketed group at p.off, in which (), [] and {} nest,
// strings are atomic and comments count as whitespace. It reports whether the group
// holds comments or whitespace other than single spaces outside strings, which
// normalize would change.
func (p *parser) skipGroup() (dirty bool, err error) {
	type open struct {
		closer byte
		pos    int
	}
	var stack []open
	for p.off < len(p.src) {
		c := p.src[p.off]
		switch {
		case c == '"':
			if err := p.skipString(); err != nil {
				return false, err
			}
			continue
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, open{closerOf(c), p.off})
		case c == ')' || c == ']' || c == '}':
			if len(stack) == 0 {
				return false, p.errAt(p.off, "expected a bracketed group, found '%c'", c)
			}
			top := stack[len(stack)-1]
			if c != top.closer {
				return false, p.errAt(p.off, "expected '%c' to close '%c' at %s, found '%c'",
					top.closer, p.src[top.pos], p.posString(top.pos), c)
			}
			stack = stack[:len(stack)-1]
		case isSpace(c):
			if c != ' ' || p.off+1 < len(p.src) && (isSpace(p.src[p.off+1]) || commentLen(p.src, p.off+1) != 0) {
				dirty = true
			}
		case c == '/':
			switch n := commentLen(p.src, p.off); {
			case n < 0:
				return false, p.errAt(p.off, "unterminated comment: expected \"*/\", found end of input")
			case n > 0:
				p.off += n
				dirty = true
				continue
			}
		}
		p.off++
		if len(stack) == 0 {
			return dirty, nil
		}
	}
	if len(stack) == 0 {
		return false, p.errAt(p.off, "expected a bracketed group, found end of input")
	}
	top := stack[len(stack)-1]
	return false, p.errAt(p.off, "expected '%c' to close '%c' at %s, found end of input",
		top.closer, p.src[top.pos], p.posString(top.pos))
}

// normalize returns text with each run of whitespace and comments outside strings
// replaced by one space. text must have been scanned by skipGroup or rawValue (strings
// and comments are terminated).
func normalize(text []byte) string {
	b := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"':
			j := i + 1
			for ; j < len(text) && text[j] != '"'; j++ {
				if text[j] == '\\' {
					j++
				}
			}
			j = min(j, len(text)-1)
			b = append(b, text[i:j+1]...)
			i = j
		case isSpace(c) || commentLen(text, i) > 0:
			for i < len(text) {
				if isSpace(text[i]) {
					i++
				} else if n := commentLen(text, i); n > 0 {
					i += n
				} else {
					break
				}
			}
			i--
			b = append(b, ' ')
		default:
			b = append(b, c)
		}
	}
	return string(b)
}

// rawGroup reads the bracketed group at p.off verbatim, with each run of whitespace
// outside strings collapsed to one space.
func (p *parser) rawGroup() (string, error) {
	start := p.off
	dirty, err := p.skipGroup()
	if err != nil {
		return "", err
	}
	if dirty {
		return normalize(p.src[start:p.off]), nil
	}
	return string(p.src[start:p.off]), nil
}

// rawValue reads the value of attribute key verbatim: a run of non-space bytes in
// which bracketed groups and strings are atomic (see rawGroup). A top-level ',',
// closing bracket, space or comment ends it.
func (p *parser) rawValue(key string) (string, error) {
	p.skipSpace()
	start := p.off
	dirty := false
	for p.off < len(p.src) {
		c := p.src[p.off]
		if isSpace(c) && p.off > start {
			// A bracketed group after a space continues the value, as in
			// replica_groups=mesh['a'=2,'b'=2] {'b'}.
			j := p.off
			for j < len(p.src) && (p.src[j] == ' ' || p.src[j] == '\t') {
				j++
			}
			if j < len(p.src) && (p.src[j] == '{' || p.src[j] == '[') {
				p.off = j
				dirty = true
				continue
			}
		}
		if c == ',' && p.meshDeviceIDs(start) {
			// XLA's mesh carries its device order after a comma, inside the same value:
			// replica_groups=mesh['a'=2,'b'=2], device_ids=(3,2,1,0) {'b'} (and in
			// shardings); its parser looks ahead for "device_ids" the same way.
			for p.off++; isSpace(p.src[p.off]); p.off++ {
			}
			dirty = true
			continue
		}
		if isSpace(c) || c == ',' || c == ')' || c == ']' || c == '}' {
			break
		}
		if c == '/' && p.off+1 < len(p.src) && (p.src[p.off+1] == '*' || p.src[p.off+1] == '/') {
			break
		}
		switch c {
		case '(', '[', '{':
			d, err := p.skipGroup()
			if err != nil {
				return "", err
			}
			dirty = dirty || d
		case '"':
			if err := p.skipString(); err != nil {
				return "", err
			}
		default:
			p.off++
		}
	}
	if p.off == start {
		return "", p.errAt(start, "expected value of %s, found %s", key, p.found())
	}
	if dirty {
		return normalize(p.src[start:p.off]), nil
	}
	return string(p.src[start:p.off]), nil
}

// meshDeviceIDs reports whether the ',' at p.off ends a mesh, "mesh[...]", that started
// at start and is followed by XLA's "device_ids=" (spaces allowed after the comma), so
// the comma belongs to the value.
func (p *parser) meshDeviceIDs(start int) bool {
	v := p.src[start:p.off]
	if !bytes.HasPrefix(v, []byte("mesh[")) || !bytes.HasSuffix(v, []byte("]")) || bytes.Contains(v, []byte("device_ids")) {
		return false
	}
	j := p.off + 1
	for j < len(p.src) && isSpace(p.src[j]) {
		j++
	}
	return bytes.HasPrefix(p.src[j:], []byte("device_ids="))
}

// ---------------------------------------------------------------------------------
// Shapes.

// shape reads a shape. In a signature's result (sigResult), a '{' after the dimensions
// starts a layout only if a layout's first character follows, since a computation body
// may come next.
func (p *parser) shape(depth int, sigResult bool) (Shape, error) {
	p.skipSpace()
	start := p.off
	if depth > maxNesting {
		return Shape{}, p.errAt(start, "shape nested more than %d deep", maxNesting)
	}
	if p.accept('(') {
		elems := []Shape{}
		if p.accept(')') {
			return TupleOf(), nil
		}
		for {
			e, err := p.shape(depth+1, false)
			if err != nil {
				return Shape{}, err
			}
			elems = append(elems, e)
			if p.accept(',') {
				continue
			}
			if p.accept(')') {
				return Shape{Elem: TupleType, Tuple: elems}, nil
			}
			return Shape{}, p.errAt(p.off, "expected ',' or ')' in tuple shape, found %s", p.found())
		}
	}
	for p.off < len(p.src) && ('a' <= p.src[p.off] && p.src[p.off] <= 'z' || isDigit(p.src[p.off])) {
		p.off++
	}
	word := p.src[start:p.off]
	t, ok := elemByName[string(word)]
	if !ok {
		if len(word) > 0 && p.off < len(p.src) && p.src[p.off] == '[' {
			return Shape{}, p.errAt(start, "unknown element type %q", word)
		}
		if string(word) == "b" && p.off < len(p.src) && p.src[p.off] == '(' {
			// XLA's buffer shape (a mutable buffer, of custom-calls such as Pin, Unpin and
			// CreateBuffer): out of this importer's scope (docs/compiler.md: Real inputs).
			return Shape{}, p.errAt(start, "buffer shape b(...) is not supported (XLA's mutable buffers of Pin/Unpin/CreateBuffer custom-calls), expected an array or tuple shape")
		}
		p.off = start
		return Shape{}, p.errAt(start, "expected shape, found %s", p.found())
	}
	if p.off >= len(p.src) || p.src[p.off] != '[' {
		return Shape{}, p.errAt(p.off, "expected '[' after element type %s, found %s", word, p.found())
	}
	p.off++
	dims := []int{}
	var dynamic []bool
	if !p.accept(']') {
		for {
			p.skipSpace()
			dyn := bytes.HasPrefix(p.src[p.off:], []byte("<="))
			if dyn {
				p.off += 2
				if dynamic == nil {
					dynamic = make([]bool, len(dims), len(dims)+1)
				}
			}
			var d int
			var err error
			if !dyn && p.off < len(p.src) && p.src[p.off] == '?' { // unbounded dynamic
				p.off++
				d, dyn = UnboundedDim, true
				if dynamic == nil {
					dynamic = make([]bool, len(dims), len(dims)+1)
				}
			} else if d, _, err = p.integer("dimension size", false); err != nil {
				return Shape{}, err
			}
			dims = append(dims, d)
			if dynamic != nil {
				dynamic = append(dynamic, dyn)
			}
			if p.accept(',') {
				continue
			}
			if p.accept(']') {
				break
			}
			return Shape{}, p.errAt(p.off, "expected ',' or ']' in shape dimensions, found %s", p.found())
		}
	}
	if (t == Token || t == Opaque) && len(dims) > 0 {
		return Shape{}, p.errAt(start, "expected %s[], found %s with dimensions", t, t)
	}
	s := Shape{Elem: t, Dims: dims, Dynamic: dynamic}
	if err := s.CheckSize(); err != nil {
		return Shape{}, p.newErr(start, err, "%v", err)
	}
	if t != Token && t != Opaque && p.off < len(p.src) && p.src[p.off] == '{' && (!sigResult || p.layoutAhead()) {
		l, err := p.layout(s)
		if err != nil {
			return Shape{}, err
		}
		s.Layout = l
	}
	return s, nil
}

// layoutAhead reports whether the '{' at p.off is followed by a layout's first token.
func (p *parser) layoutAhead() bool {
	save := p.off
	p.off++
	c := p.peek()
	p.off = save
	return isDigit(c) || c == ':' || c == '}'
}

// layout reads "{1,0:T(8,128)(2,1)}" at p.off and checks it against s.
func (p *parser) layout(s Shape) (*Layout, error) {
	start := p.off
	p.off++ // '{'
	l := &Layout{MinorToMajor: []int{}}
	if c := p.peek(); c != '}' && c != ':' {
		for {
			v, _, err := p.integer("layout dimension", true)
			if err != nil {
				return nil, err
			}
			l.MinorToMajor = append(l.MinorToMajor, v)
			if !p.accept(',') {
				break
			}
		}
	}
	if p.accept(':') {
		if err := p.layoutAttrs(l); err != nil {
			return nil, err
		}
	}
	if err := p.expect('}', "to end layout"); err != nil {
		return nil, err
	}
	if err := checkPermutation(l.MinorToMajor, s.Rank()); err != nil {
		return nil, p.newErr(start, err, "bad layout %s for %s: %v", l, s.StringNoLayout(), err)
	}
	return l, nil
}

// layoutAttrs reads what follows the ':' of a layout, in XLA's order: the tiling
// "T(8,128)(2,1)", the element size "E(4)" and the memory space "S(1)", each optional
// (at least one), each at most once. Other attributes of XLA's layouts (D, L, #, *, SC,
// P, M) are refused by name.
func (p *parser) layoutAttrs(l *Layout) error {
	seen := ""
	for p.peek() != '}' {
		pos := p.off
		key := p.run(func(c byte) bool { return c >= 'A' && c <= 'Z' || c == '#' || c == '*' })
		switch {
		case key == "":
			return p.errAt(pos, "expected a layout attribute (T, E or S) after ':' in layout, found %s", p.found())
		case key != "T" && key != "E" && key != "S":
			return p.errAt(pos, "layout attribute %s(...) is not supported (T tiling, E element size and S memory space are)", key)
		case strings.Contains(seen, key) && !(key == "T" && strings.HasSuffix(seen, "T")):
			// "T(8,128)T(2,1)" (a T before each tile, as some writers do) is one tiling.
			return p.errAt(pos, "layout attribute %s given twice", key)
		}
		seen += key
		if key == "T" {
			if err := p.layoutTiles(l); err != nil {
				return err
			}
			continue
		}
		if err := p.expect('(', "after layout attribute "+key); err != nil {
			return err
		}
		v, _, err := p.integer("layout attribute "+key, false)
		if err != nil {
			return err
		}
		if err := p.expect(')', "to end layout attribute "+key); err != nil {
			return err
		}
		if key == "E" {
			l.ElementSizeBits = v
		} else {
			l.MemorySpace = v
		}
	}
	if seen == "" {
		return p.errAt(p.off, "expected a layout attribute (T, E or S) after ':' in layout, found %s", p.found())
	}
	return nil
}

// layoutTiles reads the tiles after a layout's "T": "(8,128)(2,1)".
func (p *parser) layoutTiles(l *Layout) error {
	for first := true; first || p.peek() == '('; first = false {
		if err := p.expect('(', "to start a layout tile"); err != nil {
			return err
		}
		var tile []int
		for {
			v, _, err := p.integer("tile dimension", false)
			if err != nil {
				return err
			}
			tile = append(tile, v)
			if !p.accept(',') {
				break
			}
		}
		if err := p.expect(')', "to end a layout tile"); err != nil {
			return err
		}
		l.Tiles = append(l.Tiles, tile)
	}
	return nil
}

// ---------------------------------------------------------------------------------
// Module and computations.

func (p *parser) parseModule() (*Module, error) {
	if !p.atKeyword("HloModule") {
		if p.atHeaderless() {
			return p.parseHeaderless()
		}
		return nil, p.errAt(p.off, "expected \"HloModule\" (or, as XLA reads a module without its header, ENTRY or a computation's name and '{'), found %s", p.found())
	}
	hdr := p.off
	p.off += len("HloModule")
	name, err := p.moduleName()
	if err != nil {
		return nil, err
	}
	m := &Module{Name: name, File: p.file}
	m.Line, m.Col = p.lineCol(hdr)
	p.accept(':') // the older "HloModule name:" header form
	for p.accept(',') {
		key, err := p.attrKey()
		if err != nil {
			return nil, err
		}
		if err := p.expect('=', "after module attribute "+key); err != nil {
			return nil, err
		}
		v, err := p.rawValue(key)
		if err != nil {
			return nil, err
		}
		m.Attrs = append(m.Attrs, Attr{Key: key, Value: v})
	}
	if err := p.stackFrameTables(m); err != nil {
		return nil, err
	}
	if err := p.computations(m); err != nil {
		return nil, err
	}
	return m, nil
}

// atHeaderless reports whether the input is a module without its "HloModule" header, by
// XLA's rule (HloParserImpl::Run): it starts with ENTRY, or with a name followed by '{'
// (a computation without a signature), as the HLO of XLA's emitter and pass tests does.
// It consumes nothing.
func (p *parser) atHeaderless() bool {
	if p.atKeyword("ENTRY") {
		return true
	}
	save := p.off
	defer func() { p.off = save }()
	p.accept('%')
	if p.run(isNameChar) == "" {
		return false
	}
	return p.peek() == '{'
}

// parseHeaderless reads a module without its header (atHeaderless): computations only,
// the entry the ENTRY one or else the last, and, as XLA names it, the module named
// "module_" and the entry computation's name.
func (p *parser) parseHeaderless() (*Module, error) {
	m := &Module{File: p.file}
	m.Line, m.Col = p.lineCol(p.off)
	if err := p.computations(m); err != nil {
		return nil, err
	}
	m.Name = "module_" + m.Entry.Name
	return m, nil
}

// computations reads the module's computations to the end of the input and finishes m.
func (p *parser) computations(m *Module) error {
	for p.skipSpace(); p.off < len(p.src); p.skipSpace() {
		if p.atKeyword("HloModule") {
			return p.errAt(p.off, "a second \"HloModule\": a file holds one module (files of XLA's -split-input-file tests hold several, separated by \"// -----\": split them there)")
		}
		if err := p.computation(); err != nil {
			return err
		}
	}
	if p.lexErr != nil {
		return p.lexErr
	}
	if p.entry == nil {
		// As in XLA, without an ENTRY mark the last computation is the entry.
		for _, cs := range p.comps {
			if !cs.inline {
				p.entry = cs
			}
		}
		if p.entry == nil {
			return p.errAt(p.off, "expected a computation, found end of input")
		}
	}
	return p.finish(m)
}

// stackFrameTables reads the tables JAX writes after the module header:
//
//	FileNames      { id string }
//	FunctionNames  { id string }
//	FileLocations  { id "{" key=int ... "}" }
//	StackFrames    { id "{" key=int ... "}" }
//
// in any order, each at most once, ids numbered 1, 2, ... in order.
func (p *parser) stackFrameTables(m *Module) error {
	seen := map[string]bool{}
	for {
		p.skipSpace()
		start := p.off
		word := p.peekWord()
		switch word {
		case "FileNames", "FunctionNames", "FileLocations", "StackFrames":
		default:
			return nil
		}
		// A computation may be named like a table: it is followed by '{' or '('.
		save := p.off
		p.off += len(word)
		if c := p.peek(); c == '{' || c == '(' {
			p.off = save
			return nil
		}
		if seen[word] {
			return p.errAt(start, "duplicate %s table", word)
		}
		seen[word] = true
		if m.StackFrames == nil {
			m.StackFrames = &StackFrameIndex{}
		}
		sf := m.StackFrames
		for n := 1; ; n++ {
			if c := p.peek(); !isDigit(c) {
				break
			}
			id, idPos, err := p.integer("table id", false)
			if err != nil {
				return err
			}
			if id != n {
				return p.errAt(idPos, "expected id %d in the %s table, found %d", n, word, id)
			}
			switch word {
			case "FileNames", "FunctionNames":
				str, err := p.quoted(word + " entry")
				if err != nil {
					return err
				}
				if word == "FileNames" {
					sf.FileNames = append(sf.FileNames, str)
				} else {
					sf.FunctionNames = append(sf.FunctionNames, str)
				}
			default:
				keys := []string{"file_name_id", "function_name_id", "line", "end_line", "column", "end_column"}
				if word == "StackFrames" {
					keys = []string{"file_location_id", "parent_frame_id"}
				}
				vals, err := p.intRecord(word, keys)
				if err != nil {
					return err
				}
				if word == "StackFrames" {
					sf.StackFrames = append(sf.StackFrames, StackFrame{FileLocationID: vals[0], ParentFrameID: vals[1]})
				} else {
					sf.FileLocations = append(sf.FileLocations, FileLocation{FileNameID: vals[0], FunctionNameID: vals[1],
						Line: vals[2], EndLine: vals[3], Column: vals[4], EndColumn: vals[5]})
				}
			}
		}
	}
}

// quoted reads a double-quoted string and returns it unquoted (Go escapes).
func (p *parser) quoted(what string) (string, error) {
	if p.peek() != '"' {
		return "", p.errAt(p.off, "expected a quoted %s, found %s", what, p.found())
	}
	start := p.off
	if err := p.skipString(); err != nil {
		return "", err
	}
	raw := string(p.src[start:p.off])
	str, err := strconv.Unquote(raw)
	if err != nil {
		// XLA escapes like C; keep what Go cannot unescape verbatim.
		str = raw[1 : len(raw)-1]
	}
	return str, nil
}

// intRecord reads "{key=int key=int ...}" with keys from keys (each optional, at most
// once) and returns their values in keys order (0 when absent).
func (p *parser) intRecord(table string, keys []string) ([]int, error) {
	if err := p.expect('{', "to start a "+table+" entry"); err != nil {
		return nil, err
	}
	vals := make([]int, len(keys))
	got := make([]bool, len(keys))
	for !p.accept('}') {
		p.skipSpace()
		kpos := p.off
		key := p.run(isKeyChar)
		k := -1
		for i, name := range keys {
			if name == key {
				k = i
			}
		}
		if k < 0 || got[k] {
			if key == "" {
				return nil, p.errAt(kpos, "expected a field or '}' in a %s entry, found %s", table, p.found())
			}
			return nil, p.errAt(kpos, "unexpected or repeated field %q in a %s entry (want %s)", key, table, strings.Join(keys, ", "))
		}
		got[k] = true
		if err := p.expect('=', "after "+key); err != nil {
			return nil, err
		}
		v, _, err := p.integer(key, true)
		if err != nil {
			return nil, err
		}
		vals[k] = v
	}
	return vals, nil
}

func (p *parser) computation() error {
	p.skipSpace()
	kwPos := p.off
	isEntry := p.atKeyword("ENTRY")
	if isEntry {
		p.off += len("ENTRY")
	}
	name, pos, err := p.name("computation name")
	if err != nil {
		return err
	}
	if i, dup := p.compByName[name]; dup {
		return p.errAt(pos, "duplicate computation name %q (first defined at %s)", name, p.posString(p.comps[i].pos))
	}
	cs := &compState{comp: &Computation{Name: name}, pos: pos, root: -1, defs: map[string]int{}}
	if isEntry {
		if p.entry != nil {
			return p.errAt(kwPos, "expected one ENTRY computation, found a second (%q after %q)", name, p.entry.comp.Name)
		}
		p.entry = cs
	}
	p.compByName[name] = len(p.comps)
	p.comps = append(p.comps, cs)
	p.cur = len(p.comps) - 1

	if p.peek() == '(' {
		if err := p.signature(cs); err != nil {
			return err
		}
	}
	return p.computationBody(cs)
}

// inlineComputation reads a computation written as an attribute's value ("to_apply={
// ... }", as XLA's parser reads one: ParseHloComputation) and returns the name it gets,
// "INSTR.KEY" (made unique with a ".N" suffix), under which the printer writes it as a
// computation of its own.
func (p *parser) inlineComputation(instr, key string) (string, error) {
	name := instr + "." + key
	for i := 1; ; i++ {
		if _, taken := p.compByName[name]; !taken {
			break
		}
		name = fmt.Sprintf("%s.%s.%d", instr, key, i)
	}
	if p.nest >= maxNesting {
		return "", p.errAt(p.off, "computations nested more than %d deep", maxNesting)
	}
	cs := &compState{comp: &Computation{Name: name}, pos: p.off, root: -1, defs: map[string]int{}, inline: true}
	caller := p.cur
	p.compByName[name] = len(p.comps)
	p.comps = append(p.comps, cs)
	p.cur = len(p.comps) - 1
	p.nest++
	err := p.computationBody(cs)
	p.nest--
	p.cur = caller
	return name, err
}

// computationBody reads "{ instructions } [, attributes]" and finishes cs.
func (p *parser) computationBody(cs *compState) error {
	name := cs.comp.Name
	if err := p.expect('{', fmt.Sprintf("to start the body of computation %q", name)); err != nil {
		return err
	}
	for {
		c := p.peek()
		if p.off >= len(p.src) {
			return p.errAt(p.off, "expected '}' to end computation %q, found end of input", name)
		}
		if c == '}' {
			cs.closePos = p.off
			p.off++
			// Computation attributes: "}, execution_thread="t"" (an inline computation's
			// '}' is followed by its instruction's next attribute instead).
			for !cs.inline && p.accept(',') {
				key, err := p.attrKey()
				if err != nil {
					return err
				}
				if err := p.expect('=', "after computation attribute "+key); err != nil {
					return err
				}
				v, err := p.rawValue(key)
				if err != nil {
					return err
				}
				cs.comp.Attrs = append(cs.comp.Attrs, Attr{Key: key, Value: v})
			}
			break
		}
		if err := p.instruction(cs); err != nil {
			return err
		}
	}
	return p.finishComputation(cs)
}

func (p *parser) signature(cs *compState) error {
	cs.hasSig = true
	cs.sigPos = p.off
	p.off++ // '('
	if !p.accept(')') {
		for {
			_, pos, err := p.name("parameter name")
			if err != nil {
				return err
			}
			if err := p.expect(':', "after parameter name"); err != nil {
				return err
			}
			s, err := p.shape(0, false)
			if err != nil {
				return err
			}
			cs.params = append(cs.params, sigParam{pos: pos, shape: s})
			if p.accept(',') {
				continue
			}
			if err := p.expect(')', "after parameters"); err != nil {
				return err
			}
			break
		}
	}
	p.skipSpace()
	if !bytes.HasPrefix(p.src[p.off:], []byte("->")) {
		return p.errAt(p.off, "expected \"->\" after the parameters of computation %q, found %s", cs.comp.Name, p.found())
	}
	p.off += 2
	p.skipSpace()
	cs.retPos = p.off
	s, err := p.shape(0, true)
	if err != nil {
		return err
	}
	cs.ret = s
	return nil
}

// ---------------------------------------------------------------------------------
// Instructions.

func (p *parser) instruction(cs *compState) error {
	p.skipSpace()
	rootPos := p.off
	isRoot := p.atKeyword("ROOT")
	if isRoot {
		p.off += len("ROOT")
	}
	name, pos, err := p.name("instruction name")
	if err != nil {
		return err
	}
	if prev, dup := cs.defs[name]; dup {
		if cs.anon[name] {
			return p.errAt(pos, "duplicate instruction name %q in computation %q: the name of the nested instruction at %s (XLA rejects this too: name it otherwise)", name, cs.comp.Name, p.posString(prev))
		}
		return p.errAt(pos, "duplicate instruction name %q in computation %q (first defined at %s)", name, cs.comp.Name, p.posString(prev))
	}
	cs.defs[name] = pos
	if _, ok := p.instrDefs[name]; !ok {
		p.instrDefs[name] = pos
	}
	if err := p.expect('=', "after instruction name"); err != nil {
		return err
	}
	pi, err := p.instructionRhs(cs, name, pos, true)
	if err != nil {
		return err
	}
	if isRoot {
		if cs.root >= 0 {
			return p.errAt(rootPos, "expected one ROOT in computation %q, found a second (%q after %q)",
				cs.comp.Name, name, cs.instrs[cs.root].in.Name)
		}
		cs.root = len(cs.instrs)
	}
	cs.instrs = append(cs.instrs, pi)
	return nil
}

// instructionRhs reads what follows "name =": the result shape (omitted where XLA infers
// it), the opcode, the operands and, if allowAttrs, the attributes. Nested instructions
// among the operands (XLA's "add(f32[] parameter(0), c)") are added to cs before it.
func (p *parser) instructionRhs(cs *compState, name string, pos int, allowAttrs bool) (pendingInstr, error) {
	var err error
	// The result shape may be omitted where XLA infers it ("ROOT out = add(a, b)").
	p.skipSpace()
	shapePos := p.off
	var s Shape
	noShape := false
	if word := p.peekWord(); word != "" && !p.atShape() && opcodeByName[word] != OpInvalid &&
		p.off+len(word) < len(p.src) && p.src[p.off+len(word)] == '(' {
		noShape = true
	} else {
		s, err = p.shape(0, false)
		if err != nil {
			return pendingInstr{}, err
		}
	}
	p.skipSpace()
	opPos := p.off
	for p.off < len(p.src) && isNameChar(p.src[p.off]) {
		p.off++
	}
	opName := p.src[opPos:p.off]
	if len(opName) == 0 {
		return pendingInstr{}, p.errAt(opPos, "expected opcode, found %s", p.found())
	}
	op, ok := opcodeByName[string(opName)]
	if !ok {
		return pendingInstr{}, p.errAt(opPos, "unknown opcode %q", opName)
	}
	in := &Instruction{Name: name, Opcode: op, Shape: s}
	in.Line, in.Col = p.fastLineCol(pos)
	pi := pendingInstr{in: in, pos: pos, noShape: noShape, shapePos: shapePos}
	if !p.accept('(') {
		return pendingInstr{}, p.errAt(p.off, "expected '(' after opcode %s, found %s", op, p.found())
	}
	switch op {
	case OpParameter:
		n, _, err := p.integer("parameter number", false)
		if err != nil {
			return pendingInstr{}, err
		}
		in.ParamNum = n
		if err := p.expect(')', "after parameter number"); err != nil {
			return pendingInstr{}, err
		}
	case OpConstant:
		litPos := p.off
		lit, err := p.literal(0)
		if err != nil {
			return pendingInstr{}, err
		}
		if err := literalCount(in.Shape, lit); err != nil {
			return pendingInstr{}, p.errAt(litPos, "constant literal: %v", err)
		}
		in.Literal = lit
		if err := p.expect(')', "after constant literal"); err != nil {
			return pendingInstr{}, err
		}
	default:
		if !p.accept(')') {
			for {
				r, err := p.operand(cs)
				if err != nil {
					return pendingInstr{}, err
				}
				pi.ops = append(pi.ops, r)
				if p.accept(',') {
					continue
				}
				if err := p.expect(')', "after operands"); err != nil {
					return pendingInstr{}, err
				}
				break
			}
		}
	}
	if allowAttrs {
		var seen []string
		for p.accept(',') {
			if err := p.attribute(&pi, &seen); err != nil {
				return pi, err
			}
		}
	}
	if pi.in.Opcode == OpDot && pi.in.Dot == nil {
		// As in XLA, a dot without dimension numbers contracts nothing (an outer product):
		// XLA prints only the non-empty lists, so that is how its dumps write one.
		pi.in.Dot = &DotDims{}
	}
	return pi, nil
}

// literalCount checks that an array constant's literal has one value per element of its
// declared shape s, as XLA's parser does ("expects nested array in rank 1, but sees 0"
// for f32[10] constant(1)). Literals whose values are not written out (XLA's elided
// "{...}"), tuples, complex values and shapes without a declared or static size are not
// counted.
func literalCount(s Shape, lit string) error {
	if !s.IsArray() || s.Elem.IsComplex() || s.HasDynamic() || strings.Contains(lit, "...") ||
		strings.HasPrefix(lit, "(") {
		return nil
	}
	n := s.Elements()
	if n > 1<<24 {
		return nil // larger than any literal a dump writes out; not counted
	}
	if got := int64(len(LiteralValues(lit))); got != n {
		return fmt.Errorf("%d values for %s, which has %d elements", got, s.StringNoLayout(), n)
	}
	return nil
}

// LiteralValues splits a written-out array literal ("{{1, 2}, {3, 4}}", "7") into its
// values in row-major order, the braces and separators dropped.
func LiteralValues(lit string) []string {
	return strings.FieldsFunc(lit, func(r rune) bool {
		return r == '{' || r == '}' || r == ',' || r == ' ' || r == '\t' || r == '\n'
	})
}

// peekWord returns the run of name characters at p.off without consuming it.
func (p *parser) peekWord() string {
	end := p.off
	for end < len(p.src) && isNameChar(p.src[end]) {
		end++
	}
	return string(p.src[p.off:end])
}

// operand reads "[shape] name", or a nested instruction ("[shape] opcode(operands)",
// without attributes, as XLA's parser reads "add(f32[] parameter(0), c)"): that one is
// added to cs under a generated name (anonName) and the reference is to it.
func (p *parser) operand(cs *compState) (opRef, error) {
	var r opRef
	c := p.peek()
	start := p.off
	if c == '(' || p.atShape() {
		r.typePos = p.off
		s, err := p.shape(0, false)
		if err != nil {
			return r, err
		}
		r.typed = &s
	}
	p.skipSpace()
	if word := p.peekWord(); word != "" && opcodeByName[word] != OpInvalid &&
		p.off+len(word) < len(p.src) && p.src[p.off+len(word)] == '(' {
		p.off = start
		if p.nest >= maxNesting {
			return r, p.errAt(start, "instructions nested more than %d deep", maxNesting)
		}
		name := p.anonName(cs, word)
		cs.defs[name] = start // taken before the operands, which may nest the same opcode
		p.instrDefs[name] = start
		if cs.anon == nil {
			cs.anon = map[string]bool{}
		}
		cs.anon[name] = true
		p.nest++
		pi, err := p.instructionRhs(cs, name, start, false)
		p.nest--
		if err != nil {
			return r, err
		}
		cs.instrs = append(cs.instrs, pi)
		return opRef{name: name, pos: start}, nil
	}
	name, pos, err := p.name("operand name")
	if err != nil {
		return r, err
	}
	r.name, r.pos = name, pos
	return r, nil
}

// anonName names a nested instruction of opcode op as XLA does ("add.anon"), made unique
// with a ".N" suffix among the names read so far in the whole module, as XLA's parser's
// module-wide name uniquer does (a name written in an earlier computation is avoided
// too). A later instruction written with a generated name in the same computation is a
// duplicate, as in XLA ("instruction already exists"); in another computation it is legal.
func (p *parser) anonName(cs *compState, op string) string {
	name := op + ".anon"
	for i := 1; ; i++ {
		_, here := cs.defs[name]
		_, elsewhere := p.instrDefs[name]
		if !here && !elsewhere {
			return name
		}
		name = fmt.Sprintf("%s.anon.%d", op, i)
	}
}

// atShape reports whether an array shape ("f32[") starts at p.off.
func (p *parser) atShape() bool {
	i := p.off
	for i < len(p.src) && ('a' <= p.src[i] && p.src[i] <= 'z' || isDigit(p.src[i])) {
		i++
	}
	if i == p.off || i >= len(p.src) || p.src[i] != '[' {
		return false
	}
	_, ok := elemByName[string(p.src[p.off:i])]
	return ok
}

// literal reads a constant payload and returns it in canonical form: scalars as
// written, "{a, b}" groups with ", " separators ("{ {1, 2}, {3, 4} }" when nested),
// "(a, b)" tuples, comments and other whitespace removed.
func (p *parser) literal(depth int) (string, error) {
	c := p.peek()
	start := p.off
	if depth > maxNesting {
		return "", p.errAt(start, "constant literal nested more than %d deep", maxNesting)
	}
	if c == '{' || c == '(' {
		closer := closerOf(c)
		p.off++
		if p.accept(closer) {
			return string([]byte{c, closer}), nil
		}
		var elems []string
		nested := false
		for {
			e, err := p.literal(depth + 1)
			if err != nil {
				return "", err
			}
			nested = nested || e[0] == '{' || e[0] == '('
			elems = append(elems, e)
			if p.accept(',') {
				continue
			}
			if p.accept(closer) {
				break
			}
			return "", p.errAt(p.off, "expected ',' or '%c' in constant literal, found %s", closer, p.found())
		}
		body := strings.Join(elems, ", ")
		if c == '{' && nested {
			return "{ " + body + " }", nil
		}
		return string(c) + body + string(closer), nil
	}
	if p.off >= len(p.src) || !isLitChar(c) {
		return "", p.errAt(start, "expected constant literal, found %s", p.found())
	}
	word := p.run(isLitChar)
	if p.off < len(p.src) && p.src[p.off] == '(' { // e.g. nan(0x7fc00000)
		g, err := p.literal(depth + 1)
		if err != nil {
			return "", err
		}
		word += g
	}
	return word, nil
}

// attrKey reads an attribute name.
func (p *parser) attrKey() (string, error) {
	p.skipSpace()
	start := p.off
	key := p.run(isKeyChar)
	if key == "" {
		return "", p.errAt(start, "expected attribute name, found %s", p.found())
	}
	return key, nil
}

// attribute reads one "key=value" after a ',' and stores it in pi.
func (p *parser) attribute(pi *pendingInstr, seen *[]string) error {
	in := pi.in
	key, err := p.attrKey()
	if err != nil {
		return err
	}
	kpos := p.off - len(key)
	if !p.accept('=') {
		return p.errAt(p.off, "expected '=' after attribute name %q, found %s", key, p.found())
	}
	// Attributes that fill the same field share a duplicate-detection key.
	field := key
	switch {
	case key == "iota_dimension" && in.Opcode == OpIota:
		field = "dimensions"
	case key == "to_apply" && in.Opcode == OpCall:
		field = "calls"
	}
	for _, s := range *seen {
		if s == field {
			return p.errAt(kpos, "duplicate attribute %q", key)
		}
	}
	*seen = append(*seen, field)

	p.skipSpace()
	vpos := p.off
	switch key {
	case "dimensions":
		in.Dimensions, err = p.intList("dimensions")
		in.HasDimensions = err == nil
	case "iota_dimension":
		if in.Opcode != OpIota {
			return p.extra(in, key)
		}
		var v int
		v, _, err = p.integer("iota dimension", true)
		in.Dimensions, in.HasDimensions = []int{v}, true
	case "index":
		in.Index, _, err = p.integer("tuple index", true)
	case "slice":
		in.Slice, err = p.sliceAttr()
	case "padding":
		in.Padding, err = p.paddingAttr()
	case "window":
		in.Window, err = p.windowAttr()
	case "dim_labels":
		in.Conv, err = p.dimLabels()
	case "feature_group_count", "batch_group_count":
		var v int
		v, _, err = p.integer(key, false)
		if err == nil && v < 1 {
			return p.errAt(vpos, "expected a positive %s, found %d", key, v)
		}
		if key == "feature_group_count" {
			in.FeatureGroupCount = v
		} else {
			in.BatchGroupCount = v
		}
	case "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims":
		var dims []int
		if dims, err = p.intList(key); err != nil {
			return err
		}
		if in.Dot == nil {
			in.Dot = &DotDims{}
		}
		switch key {
		case "lhs_batch_dims":
			in.Dot.LhsBatch = dims
		case "lhs_contracting_dims":
			in.Dot.LhsContracting = dims
		case "rhs_batch_dims":
			in.Dot.RhsBatch = dims
		default:
			in.Dot.RhsContracting = dims
		}
	case "direction":
		in.Direction, err = p.word("comparison direction")
	case "kind":
		in.FusionKind, err = p.word("fusion kind")
	case "to_apply", "calls", "condition", "body":
		slot := slotToApply
		switch {
		case key == "calls" || key == "to_apply" && in.Opcode == OpCall:
			slot = slotCalls
		case key == "condition":
			slot = slotCondition
		case key == "body":
			slot = slotBody
		}
		var name string
		var pos int
		caller := p.cur
		if p.peek() == '{' {
			pos = p.off
			name, err = p.inlineComputation(in.Name, key)
		} else {
			name, pos, err = p.name("computation name")
		}
		if err == nil {
			p.refs = append(p.refs, compRef{in: in, comp: caller, slot: slot, name: name, pos: pos})
		}
	case "metadata":
		if p.peek() != '{' {
			return p.errAt(p.off, "expected '{' after metadata=, found %s", p.found())
		}
		var g string
		if g, err = p.rawGroup(); err == nil {
			in.Metadata = strings.Trim(g[1:len(g)-1], " ")
		}
	case "literal": // custom-call's "literal=s32[] 1": a shape and a literal
		var sh Shape
		if sh, err = p.shape(0, false); err != nil {
			return err
		}
		var lit string
		if lit, err = p.literal(0); err != nil {
			return err
		}
		in.Extra = append(in.Extra, Attr{Key: key, Value: sh.String() + " " + lit})
	case "sharding":
		var shape *Shape
		if !pi.noShape {
			shape = &in.Shape
		}
		in.Sharding, err = p.sharding(shape)
	case "frontend_attributes":
		_, err = p.rawValue(key)
	default:
		return p.extra(in, key)
	}
	return err
}

func (p *parser) extra(in *Instruction, key string) error {
	v, err := p.rawValue(key)
	if err != nil {
		return err
	}
	in.Extra = append(in.Extra, Attr{Key: key, Value: v})
	return nil
}

// word reads a run of name characters (a direction, a fusion kind).
func (p *parser) word(what string) (string, error) {
	p.skipSpace()
	start := p.off
	w := p.run(isNameChar)
	if w == "" {
		return "", p.errAt(start, "expected %s, found %s", what, p.found())
	}
	return w, nil
}

// sliceAttr reads "{[0:10], [0:25:2]}"; the stride defaults to 1.
func (p *parser) sliceAttr() ([]SliceDim, error) {
	if err := p.expect('{', "to start slice"); err != nil {
		return nil, err
	}
	out := []SliceDim{}
	if p.accept('}') {
		return out, nil
	}
	for {
		if err := p.expect('[', "to start a slice dimension"); err != nil {
			return nil, err
		}
		var v [3]int
		v[2] = 1
		n := 0
		for {
			x, _, err := p.integer("slice bound", true)
			if err != nil {
				return nil, err
			}
			v[n] = x
			n++
			if n == 3 || !p.accept(':') {
				break
			}
		}
		if n < 2 {
			return nil, p.errAt(p.off, "expected ':' in slice dimension, found %s", p.found())
		}
		if err := p.expect(']', "to end a slice dimension"); err != nil {
			return nil, err
		}
		out = append(out, SliceDim{Start: v[0], Limit: v[1], Stride: v[2]})
		if p.accept(',') {
			continue
		}
		if err := p.expect('}', "to end slice"); err != nil {
			return nil, err
		}
		return out, nil
	}
}

func isDimsChar(c byte) bool { return isDigit(c) || c == 'x' || c == '_' || c == '-' || c == '+' }

// dimsValue reads an 'x'-separated list of '_'-separated integer groups ("1_1x0_2"),
// each group having between minParts and maxParts integers.
func (p *parser) dimsValue(what string, minParts, maxParts int) ([][]int, error) {
	p.skipSpace()
	start := p.off
	text := p.run(isDimsChar)
	if text == "" {
		return nil, p.errAt(start, "expected %s, found %s", what, p.found())
	}
	var out [][]int
	for _, d := range strings.Split(text, "x") {
		parts := strings.Split(d, "_")
		if len(parts) < minParts || len(parts) > maxParts {
			return nil, p.errAt(start, "bad %s %q: expected %s per dimension, separated by 'x'", what, text, groupForm(minParts, maxParts))
		}
		g := make([]int, len(parts))
		for i, s := range parts {
			v, err := strconv.Atoi(s)
			if err != nil {
				return nil, p.errAt(start, "bad %s %q: expected %s per dimension, separated by 'x'", what, text, groupForm(minParts, maxParts))
			}
			g[i] = v
		}
		out = append(out, g)
	}
	return out, nil
}

func groupForm(minParts, maxParts int) string {
	switch {
	case minParts == 1 && maxParts == 1:
		return "an integer"
	case minParts == 2 && maxParts == 2:
		return "lo_hi"
	}
	return "lo_hi or lo_hi_interior"
}

// paddingAttr reads a pad op's "0_0_0x1_2_1".
func (p *parser) paddingAttr() ([]PadDim, error) {
	groups, err := p.dimsValue("padding", 2, 3)
	if err != nil {
		return nil, err
	}
	out := make([]PadDim, len(groups))
	for i, g := range groups {
		out[i] = PadDim{Lo: g[0], Hi: g[1]}
		if len(g) == 3 {
			out[i].Interior = g[2]
		}
	}
	return out, nil
}

// windowAttr reads "{size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x2
// rhs_reversal=0x1}"; absent strides and dilations are 1, absent pads 0.
func (p *parser) windowAttr() (*Window, error) {
	if err := p.expect('{', "to start window"); err != nil {
		return nil, err
	}
	fields := map[string][][]int{}
	var order []string
	positions := map[string]int{}
	for p.peek() != '}' {
		kpos := p.off
		key := p.run(isKeyChar)
		parts := 1
		switch key {
		case "size", "stride", "lhs_dilate", "rhs_dilate", "rhs_reversal":
		case "pad":
			parts = 2
		case "":
			return nil, p.errAt(kpos, "expected window field or '}', found %s", p.found())
		default:
			return nil, p.errAt(kpos, "unknown window field %q", key)
		}
		if _, dup := fields[key]; dup {
			return nil, p.errAt(kpos, "duplicate window field %q", key)
		}
		if err := p.expect('=', "after window field "+key); err != nil {
			return nil, err
		}
		v, err := p.dimsValue("window "+key, parts, parts)
		if err != nil {
			return nil, err
		}
		fields[key] = v
		positions[key] = kpos
		order = append(order, key)
	}
	end := p.off
	p.off++ // '}'
	if len(fields) == 0 {
		return &Window{}, nil
	}
	size, ok := fields["size"]
	if !ok {
		return nil, p.errAt(end, "expected size= in window, found '}'")
	}
	w := &Window{Dims: make([]WindowDim, len(size))}
	for i := range w.Dims {
		w.Dims[i] = WindowDim{Size: size[i][0], Stride: 1, LhsDilate: 1, RhsDilate: 1}
	}
	for _, key := range order {
		v := fields[key]
		if len(v) != len(size) {
			return nil, p.errAt(positions[key], "window %s has %d dimensions, but size has %d", key, len(v), len(size))
		}
		for i, g := range v {
			d := &w.Dims[i]
			switch key {
			case "stride":
				d.Stride = g[0]
			case "pad":
				d.PadLo, d.PadHi = g[0], g[1]
			case "lhs_dilate":
				d.LhsDilate = g[0]
			case "rhs_dilate":
				d.RhsDilate = g[0]
			case "rhs_reversal":
				if g[0] != 0 && g[0] != 1 {
					return nil, p.errAt(positions[key], "expected 0 or 1 in window rhs_reversal, found %d", g[0])
				}
				d.Reversal = g[0] == 1
			}
		}
	}
	return w, nil
}

// dimLabels reads a convolution's "b01f_01io->b01f".
func (p *parser) dimLabels() (*ConvDims, error) {
	p.skipSpace()
	start := p.off
	text := p.run(func(c byte) bool { return isKeyChar(c) || c == '-' || c == '>' })
	if text == "" {
		return nil, p.errAt(start, "expected dim_labels, found %s", p.found())
	}
	bad := func(why string) error {
		return p.errAt(start, "bad dim_labels %q: %s", text, why)
	}
	lhs, out, ok := strings.Cut(text, "->")
	if !ok {
		return nil, bad("expected input_kernel->output")
	}
	in, kernel, ok := strings.Cut(lhs, "_")
	if !ok {
		return nil, bad("expected input_kernel->output")
	}
	var cd ConvDims
	var err error
	var ns [3]int
	if cd.InputBatch, cd.InputFeature, cd.InputSpatial, err = convLabels(in, 'b', 'f'); err != nil {
		return nil, bad("input " + err.Error())
	}
	if cd.KernelInput, cd.KernelOutput, cd.KernelSpatial, err = convLabels(kernel, 'i', 'o'); err != nil {
		return nil, bad("kernel " + err.Error())
	}
	if cd.OutputBatch, cd.OutputFeature, cd.OutputSpatial, err = convLabels(out, 'b', 'f'); err != nil {
		return nil, bad("output " + err.Error())
	}
	ns = [3]int{len(cd.InputSpatial), len(cd.KernelSpatial), len(cd.OutputSpatial)}
	if ns[0] != ns[1] || ns[0] != ns[2] {
		return nil, bad("input, kernel and output have different numbers of spatial dimensions")
	}
	return &cd, nil
}

// convLabels decodes one part of dim_labels: the positions of labels a and b and of
// the spatial dimensions 0, 1, ... in order.
func convLabels(s string, a, b byte) (pa, pb int, spatial []int, err error) {
	n := len(s) - 2
	if n < 0 || n > 10 {
		return 0, 0, nil, fmt.Errorf("labels %q must have '%c', '%c' and 0 to 10 spatial digits", s, a, b)
	}
	pa, pb = -1, -1
	spatial = make([]int, n)
	seen := make([]bool, n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == a && pa < 0:
			pa = i
		case c == b && pb < 0:
			pb = i
		case isDigit(c) && int(c-'0') < n && !seen[c-'0']:
			seen[c-'0'] = true
			spatial[c-'0'] = i
		default:
			return 0, 0, nil, fmt.Errorf("labels %q: expected each of '%c', '%c' and 0..%d once, found '%c' at %d", s, a, b, n-1, c, i)
		}
	}
	return pa, pb, spatial, nil
}

// ---------------------------------------------------------------------------------
// Resolution and checking.

// dep is an edge of a dependency graph: the node depends on node on, written at pos.
type dep struct{ on, pos int }

// topoOrder orders nodes 0..n-1 so that each comes after the nodes it depends on,
// keeping the given order where possible (the smallest ready index goes first, so an
// order that is already valid is kept). On a cycle it returns a nil order and the user
// node and edge, on the cycle, that were written first.
func topoOrder(deps [][]dep) (order []int, cycUser int, cycEdge dep) {
	n := len(deps)
	sorted := true
	for i, ds := range deps {
		for _, d := range ds {
			if d.on >= i {
				sorted = false
			}
		}
	}
	if sorted {
		order = make([]int, n)
		for i := range order {
			order[i] = i
		}
		return order, -1, dep{}
	}
	indeg := make([]int, n)
	users := make([][]int, n)
	for i, ds := range deps {
		for _, d := range ds {
			indeg[i]++
			users[d.on] = append(users[d.on], i)
		}
	}
	var h minHeap
	for i, d := range indeg {
		if d == 0 {
			h.push(i)
		}
	}
	done := make([]bool, n)
	for len(h) > 0 {
		u := h.pop()
		order = append(order, u)
		done[u] = true
		for _, v := range users[u] {
			indeg[v]--
			if indeg[v] == 0 {
				h.push(v)
			}
		}
	}
	if len(order) == n {
		return order, -1, dep{}
	}
	// Every node left has a dependency that is left: walk them until a node repeats.
	u := 0
	for done[u] {
		u++
	}
	step := make([]int, n)
	var path []int
	for step[u] == 0 {
		path = append(path, u)
		step[u] = len(path)
		for _, d := range deps[u] {
			if !done[d.on] {
				u = d.on
				break
			}
		}
	}
	cyc := path[step[u]-1:]
	cycUser = -1
	for k, x := range cyc {
		next := cyc[(k+1)%len(cyc)]
		for _, d := range deps[x] {
			if d.on == next && (cycUser < 0 || d.pos < cycEdge.pos) {
				cycUser, cycEdge = x, d
			}
		}
	}
	return nil, cycUser, cycEdge
}

// minHeap is a binary min-heap of ints.
type minHeap []int

func (h *minHeap) push(x int) {
	*h = append(*h, x)
	a := *h
	for i := len(a) - 1; i > 0; {
		parent := (i - 1) / 2
		if a[parent] <= a[i] {
			break
		}
		a[parent], a[i] = a[i], a[parent]
		i = parent
	}
}

func (h *minHeap) pop() int {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a[l] < a[m] {
			m = l
		}
		if r < len(a) && a[r] < a[m] {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// finishComputation resolves operands, orders the instructions and checks parameters
// and the signature.
func (p *parser) finishComputation(cs *compState) error {
	c := cs.comp
	if cs.root < 0 {
		// As in XLA, a computation without ROOT returns its last instruction.
		if len(cs.instrs) == 0 {
			return p.errAt(cs.closePos, "expected an instruction in computation %q, found '}'", c.Name)
		}
		cs.root = len(cs.instrs) - 1
	}
	local := make(map[string]int, len(cs.instrs))
	for i := range cs.instrs {
		local[cs.instrs[i].in.Name] = i
	}
	sorted := true
	for i := range cs.instrs {
		pi := &cs.instrs[i]
		pi.in.Operands = make([]*Instruction, len(pi.ops))
		for j := range pi.ops {
			r := &pi.ops[j]
			k, ok := local[r.name]
			if !ok {
				if _, elsewhere := p.instrDefs[r.name]; elsewhere {
					return p.errAt(r.pos, "undefined operand %%%s: it is defined in another computation", r.name)
				}
				return p.errAt(r.pos, "undefined operand %%%s", r.name)
			}
			pi.in.Operands[j] = cs.instrs[k].in
			r.idx = k
			sorted = sorted && k < i
		}
	}
	var order []int
	if sorted {
		order = make([]int, len(cs.instrs))
		for i := range order {
			order[i] = i
		}
	} else {
		deps := make([][]dep, len(cs.instrs))
		for i := range cs.instrs {
			for _, r := range cs.instrs[i].ops {
				deps[i] = append(deps[i], dep{on: r.idx, pos: r.pos})
			}
		}
		var user int
		var edge dep
		if order, user, edge = topoOrder(deps); order == nil {
			return p.errAt(edge.pos, "operand %%%s of %%%s is part of a dependency cycle",
				cs.instrs[edge.on].in.Name, cs.instrs[user].in.Name)
		}
	}
	cs.order = order
	c.Instructions = make([]*Instruction, len(order))
	for i, k := range order {
		c.Instructions[i] = cs.instrs[k].in
	}
	c.Root = cs.instrs[cs.root].in

	// Parameters are numbered 0..n-1, each once.
	var params []int // instrs index by parameter number
	nParams := 0
	for i := range cs.instrs {
		if cs.instrs[i].in.Opcode == OpParameter {
			nParams++
		}
	}
	params = make([]int, nParams)
	for i := range params {
		params[i] = -1
	}
	for i := range cs.instrs {
		in := cs.instrs[i].in
		if in.Opcode != OpParameter {
			continue
		}
		if in.ParamNum >= nParams {
			return p.errAt(cs.instrs[i].pos, "parameter number %d out of range: computation %q has %d parameters",
				in.ParamNum, c.Name, nParams)
		}
		if prev := params[in.ParamNum]; prev >= 0 {
			return p.errAt(cs.instrs[i].pos, "duplicate parameter number %d (also %%%s)", in.ParamNum, cs.instrs[prev].in.Name)
		}
		params[in.ParamNum] = i
	}
	if cs.hasSig && len(cs.params) != nParams {
		// XLA's parser accepts a parameter list that disagrees with the body (its own
		// import tests have such computations): the body defines the computation, so
		// the list is ignored, as XLA does.
		cs.hasSig = false
	}
	cs.paramIdx = params
	return nil
}

// checkShapes infers the shapes that were omitted, checks every declared shape against
// InferShape, the types written on operands and the signature. Called computations must
// have been checked first.
func (p *parser) checkShapes(cs *compState) error {
	c := cs.comp
	for _, i := range cs.order {
		pi := &cs.instrs[i]
		in, pos := pi.in, pi.pos
		for _, r := range pi.ops {
			def := cs.instrs[r.idx].in
			if r.typed != nil && !r.typed.Compatible(def.Shape) {
				return p.errAt(r.typePos, "operand %%%s is written as %s, but defined as %s",
					r.name, r.typed.StringNoLayout(), def.Shape.StringNoLayout())
			}
		}
		want, err := InferShape(in)
		if pi.noShape {
			if err != nil || !(want.IsTuple() || want.IsArray() || want.Elem == Token) {
				msg := "it cannot be inferred"
				if err != nil {
					msg = err.Error()
				}
				return p.newErr(pi.shapePos, err, "expected the result shape of %%%s (%s): %s", in.Name, in.Opcode, msg)
			}
			in.Shape = want
			continue
		}
		if err != nil {
			return p.newErr(pos, err, "%%%s: %v", in.Name, err)
		}
		if !want.CompatibleMixedPrecision(in.Shape) {
			return p.errAt(pos, "%%%s is declared %s, but %s of its operands gives %s",
				in.Name, in.Shape.StringNoLayout(), in.Opcode, want.StringNoLayout())
		}
	}
	if cs.hasSig {
		params := cs.paramIdx
		for i, sp := range cs.params {
			if def := cs.instrs[params[i]].in; !sp.shape.Compatible(def.Shape) {
				return p.errAt(sp.pos, "signature parameter %d of computation %q is %s, but %%%s is %s",
					i, c.Name, sp.shape.StringNoLayout(), def.Name, def.Shape.StringNoLayout())
			}
		}
		if !cs.ret.Compatible(c.Root.Shape) {
			return p.errAt(cs.retPos, "signature of computation %q returns %s, but its ROOT %%%s is %s",
				c.Name, cs.ret.StringNoLayout(), c.Root.Name, c.Root.Shape.StringNoLayout())
		}
	}
	return nil
}

// finish resolves called computations, orders computations callees first and checks
// every instruction's shape.
func (p *parser) finish(m *Module) error {
	deps := make([][]dep, len(p.comps))
	for _, r := range p.refs {
		k, ok := p.compByName[r.name]
		if !ok {
			return p.errAt(r.pos, "unknown computation %q", r.name)
		}
		callee := p.comps[k].comp
		switch r.slot {
		case slotToApply:
			r.in.ToApply = callee
		case slotCalls:
			r.in.Calls = callee
			if r.in.Opcode == OpFusion {
				callee.IsFusion = true
			}
		case slotCondition:
			r.in.Condition = callee
		case slotBody:
			r.in.Body = callee
		}
		deps[r.comp] = append(deps[r.comp], dep{on: k, pos: r.pos})
	}
	order, user, edge := topoOrder(deps)
	if order == nil {
		return p.errAt(edge.pos, "computation %q calls %q, which is part of a call cycle",
			p.comps[user].comp.Name, p.comps[edge.on].comp.Name)
	}
	for _, k := range order {
		cs := p.comps[k]
		m.Computations = append(m.Computations, cs.comp)
		if err := p.checkShapes(cs); err != nil {
			return err
		}
	}
	m.Entry = p.entry.comp
	return nil
}
