package nn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// Param is one named parameter tensor of a network, row-major float32.
type Param struct {
	Name  string
	Shape []int
	Data  []float32
}

// Params are a network's parameters in a fixed order (the order its graph reads them).
type Params []*Param

// NewParam returns a parameter of the given name and shape, all zeros.
func NewParam(name string, shape ...int) *Param {
	return &Param{Name: name, Shape: slices.Clone(shape), Data: make([]float32, Size(shape))}
}

// Size is the number of elements of a tensor of the given shape.
func Size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Count is the number of scalar parameters.
func (ps Params) Count() int {
	n := 0
	for _, p := range ps {
		n += len(p.Data)
	}
	return n
}

// Clone returns a deep copy.
func (ps Params) Clone() Params {
	out := make(Params, len(ps))
	for i, p := range ps {
		out[i] = &Param{Name: p.Name, Shape: slices.Clone(p.Shape), Data: slices.Clone(p.Data)}
	}
	return out
}

// CopyFrom copies the values of o (same names and shapes) into ps.
func (ps Params) CopyFrom(o Params) error {
	if err := ps.SameLayout(o); err != nil {
		return err
	}
	for i, p := range ps {
		copy(p.Data, o[i].Data)
	}
	return nil
}

// SameLayout reports whether o has ps's names and shapes, in order.
func (ps Params) SameLayout(o Params) error {
	if len(ps) != len(o) {
		return fmt.Errorf("%d parameters, want %d", len(o), len(ps))
	}
	for i, p := range ps {
		if o[i].Name != p.Name || !slices.Equal(o[i].Shape, p.Shape) {
			return fmt.Errorf("parameter %d is %s%v, want %s%v", i, o[i].Name, o[i].Shape, p.Name, p.Shape)
		}
	}
	return nil
}

// Bytes returns the little-endian float32 bytes of every parameter in order: two models
// have identical weights exactly when their Bytes are equal.
func (ps Params) Bytes() []byte {
	var b []byte
	for _, p := range ps {
		for _, x := range p.Data {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
	}
	return b
}

// SetBytes sets every parameter from b, the form Bytes returns (little-endian float32,
// parameters in order); b must have exactly Count values, all finite.
func (ps Params) SetBytes(b []byte) error {
	if len(b) != 4*ps.Count() {
		return fmt.Errorf("%d bytes of weights, want %d", len(b), 4*ps.Count())
	}
	off := 0
	for _, p := range ps {
		for j := range p.Data {
			x := math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("parameter %s has a non-finite value", p.Name)
			}
			p.Data[j] = x
			off += 4
		}
	}
	return nil
}

// The tensor file format (weights and optimizer state): the magic "TPCGNN\x00\x01", a
// uint64 step, a uint32 tensor count, then per tensor a uint16 name length, the name, a
// uint8 rank, uint32 dimensions and the float32 values, all little-endian.
const tensorMagic = "TPCGNN\x00\x01"

// WriteTensors writes named tensors in the tensor file format.
func WriteTensors(w io.Writer, step int64, ts Params) error {
	bw := bufio.NewWriter(w)
	var hdr []byte
	hdr = append(hdr, tensorMagic...)
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(step))
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(len(ts)))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	buf := make([]byte, 0, 4096)
	for _, t := range ts {
		if len(t.Name) > math.MaxUint16 || len(t.Shape) > math.MaxUint8 {
			return fmt.Errorf("tensor %.40q: name or rank too large", t.Name)
		}
		buf = buf[:0]
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(t.Name)))
		buf = append(buf, t.Name...)
		buf = append(buf, byte(len(t.Shape)))
		for _, d := range t.Shape {
			buf = binary.LittleEndian.AppendUint32(buf, uint32(d))
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		for i := 0; i < len(t.Data); i += 1024 {
			buf = buf[:0]
			for _, x := range t.Data[i:min(i+1024, len(t.Data))] {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
			}
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// maxTensorElems bounds a tensor read from a file (a corrupt header must not allocate
// gigabytes).
const maxTensorElems = 1 << 28

// ReadTensors reads a tensor file written by WriteTensors.
func ReadTensors(r io.Reader) (step int64, ts Params, err error) {
	br := bufio.NewReader(r)
	hdr := make([]byte, len(tensorMagic)+12)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return 0, nil, fmt.Errorf("reading tensor file header: %w", err)
	}
	if string(hdr[:len(tensorMagic)]) != tensorMagic {
		return 0, nil, errors.New("not a tpucost tensor file (bad magic)")
	}
	step = int64(binary.LittleEndian.Uint64(hdr[len(tensorMagic):]))
	n := binary.LittleEndian.Uint32(hdr[len(tensorMagic)+8:])
	if n > 1<<16 {
		return 0, nil, fmt.Errorf("tensor file claims %d tensors", n)
	}
	for i := uint32(0); i < n; i++ {
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		name := make([]byte, binary.LittleEndian.Uint16(b[:]))
		if _, err := io.ReadFull(br, name); err != nil {
			return 0, nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		rank, err := br.ReadByte()
		if err != nil {
			return 0, nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		shape := make([]int, rank)
		elems := 1
		for d := range shape {
			var u [4]byte
			if _, err := io.ReadFull(br, u[:]); err != nil {
				return 0, nil, fmt.Errorf("tensor %s: %w", name, err)
			}
			shape[d] = int(binary.LittleEndian.Uint32(u[:]))
			elems *= shape[d]
			if elems > maxTensorElems {
				return 0, nil, fmt.Errorf("tensor %s: shape %v too large", name, shape[:d+1])
			}
		}
		raw := make([]byte, 4*elems)
		if _, err := io.ReadFull(br, raw); err != nil {
			return 0, nil, fmt.Errorf("tensor %s: %w", name, err)
		}
		data := make([]float32, elems)
		for j := range data {
			data[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:]))
		}
		ts = append(ts, &Param{Name: string(name), Shape: shape, Data: data})
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return 0, nil, errors.New("tensor file has trailing data")
	}
	return step, ts, nil
}

// Uniform fills data with independent draws from U(−limit, limit), one rng.Float64 per
// value in order (He or Glorot initialization, by the limit the caller chooses).
func Uniform(data []float32, limit float64, rng *rand.Rand) {
	for i := range data {
		data[i] = float32((2*rng.Float64() - 1) * limit)
	}
}

// GlorotLimit is the limit of Glorot (Xavier) uniform initialization, √(6/(fanIn+fanOut)).
func GlorotLimit(fanIn, fanOut int) float64 { return math.Sqrt(6 / float64(fanIn+fanOut)) }
