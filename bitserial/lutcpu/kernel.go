package lutcpu

import (
	"math/rand/v2"

	"github.com/tpucost/tpucost/bitserial"
)

// Kernel is one configuration of the LUT kernel on one layer, with its data: a random
// pool of P vectors of z int8 weights, random pool indices for the layer's weights and
// random b-bit activations, all drawn from a seed (the kernel's time does not depend on
// the values, only its accumulators do). Run is the timed work: the table build
// (bitserial.BuildLUT, counted in every run), the bit-planes (bitserial.BitPlanes) and
// the convolution in the config's loop order, blocking and unrolling
// (bitserial.ConvLUTVariant, the code the network runs). The weight layouts
// each order reads (indices by output channel, or by group for the channel order) are
// prepared once by NewKernel, as a network's weights are at load time.
type Kernel struct {
	cfg   Config
	l     bitserial.Layer
	pool  []int8
	idx   []uint8 // [Cout][K·K·Cin/z]
	idxT  []uint8 // [K·K·Cin/z][Cout] (channel order)
	in    []uint8 // H·W·Cin activations, each < 2^b
	lut   bitserial.LUT
	plane []uint8              // b bit-planes of the input
	mem   bitserial.LUTScratch // one window's patterns; the pool-table order's vector table
	acc   []int32
}

// NewKernel returns the kernel of config c on layer l with data drawn from seed, or c's
// Check error.
func NewKernel(l bitserial.Layer, c Config, seed uint64) (*Kernel, error) {
	if err := c.Check(l); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, uint64(c.P)<<16|uint64(c.Z)<<8|uint64(c.B)))
	k := &Kernel{cfg: c, l: l}
	k.pool = make([]int8, c.P*c.Z)
	for i := range k.pool {
		k.pool[i] = int8(r.IntN(256) - 128)
	}
	n := l.K * l.K * l.Cin / c.Z
	k.idx = make([]uint8, l.Cout*n)
	for i := range k.idx {
		k.idx[i] = uint8(r.IntN(c.P))
	}
	if c.Order == OrderChannel {
		k.idxT = bitserial.GroupMajor(l, k.idx, c.Z)
	}
	k.in = make([]uint8, l.H*l.W*l.Cin)
	for i := range k.in {
		k.in[i] = uint8(r.IntN(1 << c.B))
	}
	// BitPlanes with z = 8 reads 8 bytes at a time; pad the planes to 8 planes.
	k.plane = make([]uint8, 8*l.H*l.W*l.Cin/c.Z+8)
	k.acc = make([]int32, l.OH()*l.OW()*l.Cout)
	return k, nil
}

// Config is the kernel's config.
func (k *Kernel) Config() Config { return k.cfg }

// Run builds the table, splits the activations into bit-planes and computes the layer's
// accumulators (the pool-table order builds its vector table from them, in the run) (returned; owned by k, overwritten by the next Run).
func (k *Kernel) Run() []int32 {
	c := k.cfg
	bitserial.BuildLUT(&k.lut, k.pool, c.Z)
	bitserial.BitPlanes(k.l, k.in, c.Z, c.B, k.plane)
	bitserial.ConvLUTVariant(k.l, k.plane, k.idx, k.idxT, &k.lut, c.B, c.Variant(), k.acc, &k.mem)
	return k.acc
}

// Reference is the integer reference of Run's accumulators: the 8-bit integer kernel
// (bitserial.ConvInt8) on the expanded pool weights.
func (k *Kernel) Reference() []int32 {
	z := k.cfg.Z
	w := make([]int8, 0, len(k.idx)*z)
	for _, p := range k.idx {
		w = append(w, k.pool[int(p)*z:int(p)*z+z]...)
	}
	acc := make([]int32, len(k.acc))
	bitserial.ConvInt8(k.l, k.in, w, acc, make([]uint8, k.l.K*k.l.K*k.l.Cin))
	return acc
}
