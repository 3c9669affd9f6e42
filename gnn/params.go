package gnn

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

// Param is one named parameter tensor of a model, row-major float32.
type Param struct {
	Name  string
	Shape []int
	Data  []float32
}

// Params are a model's parameters in a fixed order (the order of paramSpecs).
type Params []*Param

// paramSpec describes one parameter: its shape, and the fan-in and fan-out used to
// initialize it (0 fan-in: zeros; embed: the embedding init).
type paramSpec struct {
	name          string
	shape         []int
	fanIn, fanOut int
	kind          initKind
}

type initKind int

const (
	initZero   initKind = iota
	initHe              // uniform ±√(6/fanIn): ReLU layers
	initXavier          // uniform ±√(6/(fanIn+fanOut)): the linear output layer
	initEmbed           // uniform ±√(3/width): unit-variance-ish embedding rows
)

// headInput is the width of the head's input: R reductions of the node embedding and the
// kernel features (the per-kernel part), and the config features.
func (c Config) headInput() (perKernel, perConfig int) {
	return len(c.Reduce)*c.Hidden + c.KernelWidth, c.ConfigWidth
}

// paramSpecs lists the parameters of an architecture, in their fixed order. Layers that
// read a concatenation ([emb, x], [h, mean_in, mean_out], [reductions…, kernel, config])
// hold one weight block per part: x·W = Σ_parts part·W_part needs no concatenation.
func (c Config) paramSpecs() []paramSpec {
	H := c.Hidden
	in := c.EmbedDim + c.NodeWidth + c.NodeConfigWidth
	specs := []paramSpec{
		{name: "embed", shape: []int{c.Vocab, c.EmbedDim}, kind: initEmbed},
		{name: "input.w_op", shape: []int{c.EmbedDim, H}, fanIn: in, fanOut: H, kind: initHe},
		{name: "input.w_x", shape: []int{c.NodeWidth, H}, fanIn: in, fanOut: H, kind: initHe},
	}
	if c.PerNode() {
		specs = append(specs, paramSpec{name: "input.w_nc", shape: []int{c.NodeConfigWidth, H}, fanIn: in, fanOut: H, kind: initHe})
	}
	specs = append(specs, paramSpec{name: "input.b", shape: []int{H}})
	for l := 1; l <= c.Layers; l++ {
		for _, part := range []string{"self", "in", "out"} {
			specs = append(specs, paramSpec{name: fmt.Sprintf("sage%d.w_%s", l, part), shape: []int{H, H}, fanIn: 3 * H, fanOut: H, kind: initHe})
		}
		specs = append(specs, paramSpec{name: fmt.Sprintf("sage%d.b", l), shape: []int{H}})
	}
	if !c.MultiTask() {
		return append(specs, c.headSpecs("")...)
	}
	for _, t := range c.Tasks {
		specs = append(specs, c.headSpecs(c.headPrefix(string(t)))...)
	}
	return specs
}

// headSpecs lists the parameters of one head, their names prefixed with prefix.
func (c Config) headSpecs(prefix string) []paramSpec {
	H := c.Hidden
	var specs []paramSpec
	gk, gc := c.headInput()
	h0 := c.Head[0]
	for _, r := range c.Reduce {
		specs = append(specs, paramSpec{name: "head0.w_" + string(r), shape: []int{H, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	// Inputs of width 0 (a feature set without kernel features, or a per-node model
	// without global config features) have no weight block.
	if c.KernelWidth > 0 {
		specs = append(specs, paramSpec{name: "head0.w_kernel", shape: []int{c.KernelWidth, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	if gc > 0 {
		specs = append(specs, paramSpec{name: "head0.w_config", shape: []int{gc, h0}, fanIn: gk + gc, fanOut: h0, kind: initHe})
	}
	specs = append(specs, paramSpec{name: "head0.b", shape: []int{h0}})
	for i := 1; i < len(c.Head); i++ {
		specs = append(specs,
			paramSpec{name: fmt.Sprintf("head%d.w", i), shape: []int{c.Head[i-1], c.Head[i]}, fanIn: c.Head[i-1], fanOut: c.Head[i], kind: initHe},
			paramSpec{name: fmt.Sprintf("head%d.b", i), shape: []int{c.Head[i]}})
	}
	last := c.Head[len(c.Head)-1]
	specs = append(specs,
		paramSpec{name: "out.w", shape: []int{last, 1}, fanIn: last, fanOut: 1, kind: initXavier},
		paramSpec{name: "out.b", shape: []int{1}})
	for i := range specs {
		specs[i].name = prefix + specs[i].name
	}
	return specs
}

// initParams draws the initial parameters of c from a PCG generator seeded with seed.
func initParams(c Config, seed int64) Params {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7470_7563_6f73_7431)) // "tpucost1"
	var ps Params
	for _, s := range c.paramSpecs() {
		p := &Param{Name: s.name, Shape: slices.Clone(s.shape), Data: make([]float32, prod(s.shape))}
		var limit float64
		switch s.kind {
		case initHe:
			limit = math.Sqrt(6 / float64(s.fanIn))
		case initXavier:
			limit = math.Sqrt(6 / float64(s.fanIn+s.fanOut))
		case initEmbed:
			limit = math.Sqrt(3 / float64(s.shape[1]))
		}
		if limit > 0 {
			for i := range p.Data {
				p.Data[i] = float32((2*rng.Float64() - 1) * limit)
			}
		}
		ps = append(ps, p)
	}
	return ps
}

func prod(shape []int) int {
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
	if err := ps.sameLayout(o); err != nil {
		return err
	}
	for i, p := range ps {
		copy(p.Data, o[i].Data)
	}
	return nil
}

func (ps Params) sameLayout(o Params) error {
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

// The tensor file format (weights and optimizer state): the magic "TPCGNN\x00\x01", a
// uint64 step, a uint32 tensor count, then per tensor a uint16 name length, the name, a
// uint8 rank, uint32 dimensions and the float32 values, all little-endian.
const tensorMagic = "TPCGNN\x00\x01"

// writeTensors writes named tensors in the tensor file format.
func writeTensors(w io.Writer, step int64, ts Params) error {
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

// readTensors reads a tensor file.
func readTensors(r io.Reader) (step int64, ts Params, err error) {
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
