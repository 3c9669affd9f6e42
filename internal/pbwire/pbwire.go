// Package pbwire reads protocol buffer messages from their wire format by field number,
// without generated code (google.golang.org/protobuf's protowire underneath): XLA's
// HloModuleProto (compiler/hlo) and tpu_graphs' tuning protos (dataset/tpugraphs) are
// decoded with it from field numbers their readers document. A message is its fields in
// wire order (Fields) or grouped by number (Parse).
package pbwire

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one field as it appears on the wire.
type Field struct {
	Num  protowire.Number
	Type protowire.Type
	V    uint64 // varint, fixed32 or fixed64 value
	B    []byte // bytes value (a string, bytes, a message or a packed repeated field)
}

// DecodeError is a message that is not valid wire format: where decoding stopped and,
// in words, why (never protowire's "proto: cannot parse reserved wire type").
type DecodeError struct {
	Offset int    // byte offset in the decoded message of the field (or value) at fault
	Why    string // e.g. "a reserved wire type"
	at     []byte // the decoded message from Offset on: a subslice of the caller's bytes
}

func (e *DecodeError) Error() string { return fmt.Sprintf("at byte %d: %s", e.Offset, e.Why) }

// OffsetIn is the offset of the fault in data, a buffer the decoded message was cut from
// (the whole file, when a nested message failed), or Offset when the message is not
// part of data.
func (e *DecodeError) OffsetIn(data []byte) int {
	if i := cap(data) - cap(e.at); len(e.at) > 0 && i >= 0 && i < len(data) && &data[i] == &e.at[0] {
		return i
	}
	return e.Offset
}

// decodeError is the DecodeError of protowire's error code n (a negative length) at
// msg[off:].
func decodeError(msg []byte, off, n int) *DecodeError {
	why := "malformed data"
	switch n {
	case -1:
		why = "the data ends inside a field"
	case -2:
		why = "a field number out of range"
	case -3:
		why = "an integer longer than 10 bytes"
	case -4:
		why = "a reserved wire type"
	case -5:
		why = "a group whose end does not match its start"
	case -6:
		why = "groups nested too deep"
	}
	return &DecodeError{Offset: off, Why: why, at: msg[off:]}
}

// Invalid is the error of file, whose bytes are data, when it is not a valid protocol
// buffer of kind what ("HloModuleProto"): "FILE: not a valid WHAT at byte N: WHY (...)"
// with N counted in data, for a DecodeError anywhere in err's chain (however deep the
// message that failed), else "FILE: not a valid WHAT: ERR". It wraps err.
func Invalid(file, what string, data []byte, err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		return &fileError{err: err, msg: fmt.Sprintf("%s: not a valid %s at byte %d: %s (the file is damaged or is not of this kind)",
			file, what, de.OffsetIn(data), de.Why)}
	}
	return fmt.Errorf("%s: not a valid %s: %w", file, what, err)
}

// fileError is an error with its own message that wraps another (Invalid).
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// Fields splits a message into its fields, in wire order. A malformed message is a
// *DecodeError at the field where decoding stopped.
func Fields(b []byte) ([]Field, error) {
	var out []Field
	msg := b
	for len(b) > 0 {
		off := len(msg) - len(b)
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, decodeError(msg, off, n)
		}
		b = b[n:]
		f := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.V, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.V = uint64(v)
		case protowire.Fixed64Type:
			f.V, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			e := decodeError(msg, off, n)
			e.Why = fmt.Sprintf("field %d: %s", num, e.Why)
			return nil, e
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// Varints returns the values of a repeated integer field occurrence: its value (a
// varint, or a fixed-width scalar), or the values of a packed varint encoding.
func (f Field) Varints() ([]uint64, error) {
	switch f.Type {
	case protowire.VarintType, protowire.Fixed32Type, protowire.Fixed64Type:
		return []uint64{f.V}, nil
	case protowire.BytesType:
		var out []uint64
		b := f.B
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, decodeError(f.B, len(f.B)-len(b), n)
			}
			out = append(out, v)
			b = b[n:]
		}
		return out, nil
	}
	return nil, errors.New("want integers")
}

// Message is a message's fields by number, each number's occurrences in wire order.
type Message map[protowire.Number][]Field

// Parse reads a message (see Fields).
func Parse(b []byte) (Message, error) {
	fs, err := Fields(b)
	if err != nil {
		return nil, err
	}
	m := Message{}
	for _, f := range fs {
		m[f.Num] = append(m[f.Num], f)
	}
	return m, nil
}

// All returns the occurrences of field n.
func (m Message) All(n protowire.Number) []Field { return m[n] }

// Has reports whether field n occurs.
func (m Message) Has(n protowire.Number) bool { return len(m[n]) > 0 }

// Bytes returns the last bytes value of field n (a later occurrence wins, as in proto3).
func (m Message) Bytes(n protowire.Number) ([]byte, bool) {
	fs := m[n]
	if len(fs) == 0 || fs[len(fs)-1].Type != protowire.BytesType {
		return nil, false
	}
	return fs[len(fs)-1].B, true
}

// Str returns the last string value of field n ("" when absent).
func (m Message) Str(n protowire.Number) string {
	b, _ := m.Bytes(n)
	return string(b)
}

// Int returns the last scalar value of field n as a signed integer (0 when absent).
func (m Message) Int(n protowire.Number) int64 {
	fs := m[n]
	if len(fs) == 0 || fs[len(fs)-1].Type == protowire.BytesType {
		return 0
	}
	return int64(fs[len(fs)-1].V)
}

// Ints returns repeated integer field n, packed or not.
func (m Message) Ints(n protowire.Number) ([]int64, error) {
	var out []int64
	for _, f := range m[n] {
		vs, err := f.Varints()
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", n, err)
		}
		for _, v := range vs {
			out = append(out, int64(v))
		}
	}
	return out, nil
}

// Msgs parses repeated message field n.
func (m Message) Msgs(n protowire.Number) ([]Message, error) {
	var out []Message
	for _, f := range m[n] {
		if f.Type != protowire.BytesType {
			return nil, fmt.Errorf("field %d is not a message", n)
		}
		sub, err := Parse(f.B)
		if err != nil {
			return nil, fmt.Errorf("field %d: %w", n, err)
		}
		out = append(out, sub)
	}
	return out, nil
}

// Msg parses message field n (the last occurrence; an empty message when absent).
func (m Message) Msg(n protowire.Number) (Message, error) {
	ms, err := m.Msgs(n)
	if err != nil || len(ms) == 0 {
		return Message{}, err
	}
	return ms[len(ms)-1], nil
}
