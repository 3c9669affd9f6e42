package tpugraphs

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/inputfile"
)

// NPZ is the arrays of one npz file by key (the member name without ".npy").
type NPZ map[string]*Array

// Error is an error about one npz file, or one member of it. Its message is one line:
// "file: member key.npy: what was wrong".
type Error struct {
	File   string
	Member string // "" for the archive as a whole
	Err    error
}

func (e *Error) Error() string {
	if e.Member == "" {
		return e.File + ": " + e.Err.Error()
	}
	return e.File + ": member " + e.Member + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ReadNPZFile is ReadNPZFileContext under context.Background().
func ReadNPZFile(path string) (NPZ, error) { return ReadNPZFileContext(context.Background(), path) }

// ReadNPZFileContext reads an npz file (see DecodeNPZ) of at most inputfile.Max(ctx,
// inputfile.NPZ) bytes (4 GiB unless ctx carries --max-input-bytes), member by member from
// a regular file; a FIFO or a device is read whole first, and that read (or the open)
// stops when ctx is cancelled.
func ReadNPZFileContext(ctx context.Context, path string) (NPZ, error) {
	f, err := inputfile.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tpugraphs: %w", err)
	}
	if !st.Mode().IsRegular() {
		data, err := inputfile.ReadOpen(ctx, f, inputfile.NPZ)
		if err != nil {
			return nil, fmt.Errorf("tpugraphs: %w", err)
		}
		return DecodeNPZ(path, data)
	}
	if limit := inputfile.Max(ctx, inputfile.NPZ); st.Size() > limit {
		return nil, fmt.Errorf("tpugraphs: %w", &inputfile.TooLargeError{Path: path, Format: inputfile.NPZ, Limit: limit})
	}
	zr, err := zip.NewReader(f, st.Size())
	if err != nil {
		return nil, &Error{File: path, Err: fmt.Errorf("not an npz (zip) archive: %w", err)}
	}
	return decodeZip(path, zr)
}

// DecodeNPZ decodes an npz archive held in data (name is used in errors only): a zip of
// .npy members, stored or deflated, as numpy.savez and numpy.savez_compressed write them.
// Every member must be a .npy array of a dtype parseDescr accepts (bool, 1–8 byte
// integers, float32, float64; either byte order; C or Fortran order) whose shape matches
// its size; arrays come back in C order.
func DecodeNPZ(name string, data []byte) (NPZ, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, &Error{File: name, Err: fmt.Errorf("not an npz (zip) archive: %w", err)}
	}
	return decodeZip(name, zr)
}

func decodeZip(name string, zr *zip.Reader) (NPZ, error) {
	out := NPZ{}
	for _, f := range zr.File {
		key, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok || key == "" {
			return nil, &Error{File: name, Member: f.Name, Err: errors.New("not a .npy member: an npz holds only KEY.npy arrays")}
		}
		if _, dup := out[key]; dup {
			return nil, &Error{File: name, Member: f.Name, Err: errors.New("appears twice in the archive")}
		}
		a, err := readMember(f)
		if err != nil {
			return nil, &Error{File: name, Member: f.Name, Err: err}
		}
		out[key] = a
	}
	return out, nil
}

func readMember(f *zip.File) (*Array, error) {
	if f.Method != zip.Store && f.Method != zip.Deflate {
		return nil, fmt.Errorf("compression method %d is not supported: want stored (0) or deflated (8)", f.Method)
	}
	if f.UncompressedSize64 > MaxArrayBytes+1<<20 {
		return nil, fmt.Errorf("%d bytes uncompressed exceed the limit of %d per array", f.UncompressedSize64, int64(MaxArrayBytes))
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	// Deflate expands at most 1032 times, so a size the header claims beyond that is a
	// lie that must not be allocated up front.
	buf.Grow(int(min(f.UncompressedSize64, 1032*f.CompressedSize64+1024, 256<<20)))
	n, err := io.Copy(&buf, io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if uint64(n) != f.UncompressedSize64 {
		return nil, fmt.Errorf("holds %d bytes, its zip header says %d", n, f.UncompressedSize64)
	}
	return decodeNpy(buf.Bytes())
}

// Keys returns the array keys in sorted order.
func (z NPZ) Keys() []string {
	keys := make([]string, 0, len(z))
	for k := range z {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteNPZFile writes arrays as an npz file atomically (see EncodeNPZ).
func WriteNPZFile(path string, z NPZ, compress bool) error {
	return atomicfile.Write(path, func(w io.Writer) error { return EncodeNPZ(w, z, compress) })
}

// EncodeNPZ writes arrays as an npz archive, members in key order, deflated when compress
// is set (numpy.savez_compressed) and stored otherwise (numpy.savez). Each array is
// written little endian in C order with the kind and width of its Descr ("<f4" when
// Descr is empty and F32 holds the values, "<f8" for F64, "<i8" for Ints); an integer
// that does not fit the width is an error. The output depends only on the arrays.
func EncodeNPZ(w io.Writer, z NPZ, compress bool) error {
	zw := zip.NewWriter(w)
	for _, key := range z.Keys() {
		b, err := encodeNpy(z[key])
		if err != nil {
			return fmt.Errorf("tpugraphs: array %s: %w", key, err)
		}
		h := &zip.FileHeader{Name: key + ".npy", Method: zip.Store}
		if compress {
			h.Method = zip.Deflate
		}
		mw, err := zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("tpugraphs: %w", err)
		}
		if _, err := mw.Write(b); err != nil {
			return fmt.Errorf("tpugraphs: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("tpugraphs: %w", err)
	}
	return nil
}

// encodeNpy returns the .npy version 1.0 bytes of a.
func encodeNpy(a *Array) ([]byte, error) {
	descr := a.Descr
	if descr == "" {
		switch {
		case a.F32 != nil:
			descr = "<f4"
		case a.F64 != nil:
			descr = "<f8"
		default:
			descr = "<i8"
		}
	}
	t, err := parseDescr(descr)
	if err != nil {
		return nil, err
	}
	if t.size > 1 {
		descr = "<" + descr[1:]
	} else {
		descr = "|" + descr[1:]
	}
	n, err := elements(a.Shape, t.size)
	if err != nil {
		return nil, err
	}
	if n != a.Len() {
		return nil, fmt.Errorf("shape %v holds %d elements, the array has %d", a.Shape, n, a.Len())
	}
	if (t.kind == 'f') != (a.Ints == nil) {
		return nil, fmt.Errorf("dtype %s does not match the values held (integers: %v)", descr, a.Ints != nil)
	}
	dims := make([]string, len(a.Shape))
	for i, d := range a.Shape {
		dims[i] = fmt.Sprint(d)
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	// numpy pads the header with spaces and a newline so that the data starts at a
	// multiple of 64 bytes.
	hlen := len(dict) + 1
	pad := (64 - (10+hlen)%64) % 64
	if 10+hlen+pad > 10+math.MaxUint16 {
		return nil, errors.New("header too long for .npy version 1.0")
	}
	buf := make([]byte, 0, 10+hlen+pad+n*t.size)
	buf = append(buf, npyMagic...)
	buf = append(buf, 1, 0)
	buf = binary.LittleEndian.AppendUint16(buf, uint16(hlen+pad))
	buf = append(buf, dict...)
	buf = append(buf, bytes.Repeat([]byte{' '}, pad)...)
	buf = append(buf, '\n')
	le := binary.LittleEndian
	switch {
	case t.kind == 'f' && t.size == 4:
		for _, v := range a.Float32s() {
			buf = le.AppendUint32(buf, math.Float32bits(v))
		}
	case t.kind == 'f':
		for _, v := range a.Float64s() {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
	default:
		lo, hi := intRange(t)
		for i, v := range a.Ints {
			if v < lo || v > hi {
				return nil, fmt.Errorf("element %d is %d, outside %s's range [%d, %d]", i, v, descr, lo, hi)
			}
			switch t.size {
			case 1:
				buf = append(buf, byte(v))
			case 2:
				buf = le.AppendUint16(buf, uint16(v))
			case 4:
				buf = le.AppendUint32(buf, uint32(v))
			default:
				buf = le.AppendUint64(buf, uint64(v))
			}
		}
	}
	return buf, nil
}

// intRange is the range of an integer dtype as int64 (uint64 is capped at MaxInt64).
func intRange(t dtype) (lo, hi int64) {
	bits := 8 * uint(t.size)
	switch t.kind {
	case 'b':
		return 0, 1
	case 'u':
		if bits == 64 {
			return 0, math.MaxInt64
		}
		return 0, 1<<bits - 1
	default:
		return -1 << (bits - 1), 1<<(bits-1) - 1
	}
}
