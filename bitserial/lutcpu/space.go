// Package lutcpu is the bit-serial LUT kernel's configuration space and its measurement
// on the processor running it (issue 37, slice 2): P, z, b and the kernel's loop order,
// output-channel blocking and unrolling, each a real code variant (bitserial.ConvLUTVariant,
// the code the network runs) equal bit for bit to the integer reference
// (bitserial.ConvInt8 on the expanded pool weights); a measurement
// backend with warm-up, repeats, median, spread, a noise figure, outlier rejection and
// re-measurement of noisy samples (Measurer, behind the Backend interface, with an
// injectable Timer); an analytical model of the kernel (table build + lookups + adds);
// features and a learned model (ridge regression on log time); generation of a measured
// dataset (a measured-config table of package dataset); evaluation by Kendall τ;
// model-guided tuning that counts its measurements; and the Planner that picks, by
// measurement on this CPU, the LUT, 8-bit integer and 8-bit weight-pool variants the
// network (`tpucost bitserial`) runs.
package lutcpu

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/bitserial"
)

// Order is the LUT kernel's loop order inside one output position (bitserial's: the
// variants are bitserial's code, which the network runs too).
type Order = bitserial.LoopOrder

// The loop orders.
const (
	OrderBitGroup  = bitserial.OrderBitGroup
	OrderGroupBit  = bitserial.OrderGroupBit
	OrderChannel   = bitserial.OrderChannel
	OrderPoolTable = bitserial.OrderPoolTable
)

// Orders lists the loop orders.
func Orders() []Order { return bitserial.LoopOrders() }

// Blocks lists the blocking factors (bitserial.Blocks).
func Blocks() []int { return bitserial.Blocks() }

// Unrolls lists the unrolling factors (bitserial.Unrolls).
func Unrolls() []int { return bitserial.Unrolls() }

// Config is one configuration of the LUT kernel.
type Config struct {
	P      int   // pool vectors: a power of two, 16..256
	Z      int   // weights per pool vector: 1..8, dividing the layer's input channels
	B      int   // activation bits: 1..8
	Order  Order // loop order
	Block  int   // blocking factor (Blocks)
	Unroll int   // unrolling factor (Unrolls)
}

// Variant is c's implementation variant: order, blocking, unrolling.
func (c Config) Variant() bitserial.LUTVariant {
	return bitserial.LUTVariant{Order: c.Order, Block: c.Block, Unroll: c.Unroll}
}

// String is the config's canonical form, "P=64;z=8;b=4;order=bit-group;block=2;unroll=4",
// which ParseConfig reads.
func (c Config) String() string {
	return fmt.Sprintf("P=%d;z=%d;b=%d;order=%s;block=%d;unroll=%d", c.P, c.Z, c.B, c.Order, c.Block, c.Unroll)
}

// ParseConfig reads a config's canonical form (Config.String) and checks it against l.
func ParseConfig(s string, l bitserial.Layer) (Config, error) {
	var c Config
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || seen[k] {
			return c, fmt.Errorf("config %q: want P=..;z=..;b=..;order=..;block=..;unroll=..", s)
		}
		seen[k] = true
		if k == "order" {
			c.Order = Order(v)
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("config %q: %s=%q is not an integer", s, k, v)
		}
		switch k {
		case "P":
			c.P = n
		case "z":
			c.Z = n
		case "b":
			c.B = n
		case "block":
			c.Block = n
		case "unroll":
			c.Unroll = n
		default:
			return c, fmt.Errorf("config %q: unknown key %q", s, k)
		}
	}
	if len(seen) != 6 {
		return c, fmt.Errorf("config %q: want P=..;z=..;b=..;order=..;block=..;unroll=..", s)
	}
	return c, c.Check(l)
}

// Check reports, in one line, what is wrong with c for layer l: b outside 1..8, P not a
// power of two in 16..256, z outside 1..8 or not dividing the input channels, an unknown
// order, blocking or unrolling factor, or a block not dividing the output channels.
func (c Config) Check(l bitserial.Layer) error {
	if err := bitserial.CheckBits(c.B); err != nil {
		return err
	}
	if c.P < 16 || c.P > 256 || c.P&(c.P-1) != 0 {
		return fmt.Errorf("pool size P=%d: want a power of two in 16..256", c.P)
	}
	if c.Z < 1 || c.Z > 8 || l.Cin%c.Z != 0 {
		return fmt.Errorf("z=%d: want 1..8 dividing the layer's %d input channels", c.Z, l.Cin)
	}
	return c.Variant().Check(l)
}

// Space is the configuration space of the LUT kernel on one layer: every combination of
// the listed values.
type Space struct {
	Layer bitserial.Layer
	Ps    []int
	Zs    []int
	Bs    []int
}

// DefaultLayer is the network's third convolution (bitserial.DefaultArch): 7×7×32 →
// 7×7×32, 3×3, stride 1.
func DefaultLayer() bitserial.Layer { return bitserial.DefaultArch.Layers()[2] }

// DefaultSpace is P in {16..256}, z in {2, 4, 8}, b in 1..8 on DefaultLayer, with every
// order, block and unroll: 5·3·8·4·3·3 = 4,320 configs.
func DefaultSpace() Space {
	return Space{Layer: DefaultLayer(), Ps: []int{16, 32, 64, 128, 256}, Zs: []int{2, 4, 8}, Bs: []int{1, 2, 3, 4, 5, 6, 7, 8}}
}

// Configs lists the space's configs in a fixed order (P, z, b, order, block, unroll,
// the last varying fastest), or the first config that Check refuses.
func (s Space) Configs() ([]Config, error) {
	var out []Config
	for _, p := range s.Ps {
		for _, z := range s.Zs {
			for _, b := range s.Bs {
				for _, o := range Orders() {
					for _, bl := range Blocks() {
						for _, u := range Unrolls() {
							c := Config{P: p, Z: z, B: b, Order: o, Block: bl, Unroll: u}
							if err := c.Check(s.Layer); err != nil {
								return nil, err
							}
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty configuration space: want at least one P, z and b")
	}
	return out, nil
}

// Problem is what the implementation variants of the kernel compute alike: the pool size,
// vector length and activation bits. Tuning picks a problem's fastest variant.
type Problem struct{ P, Z, B int }

// Problem is c's problem.
func (c Config) Problem() Problem { return Problem{c.P, c.Z, c.B} }

// String is "P=64;z=8;b=4".
func (p Problem) String() string { return fmt.Sprintf("P=%d;z=%d;b=%d", p.P, p.Z, p.B) }

// Variants lists p's configs: every order, block and unroll, in Space.Configs' order.
func (p Problem) Variants() []Config {
	var out []Config
	for _, o := range Orders() {
		for _, bl := range Blocks() {
			for _, u := range Unrolls() {
				out = append(out, Config{P: p.P, Z: p.Z, B: p.B, Order: o, Block: bl, Unroll: u})
			}
		}
	}
	return out
}

// Problems lists the space's problems in Configs' order.
func (s Space) Problems() []Problem {
	var out []Problem
	for _, p := range s.Ps {
		for _, z := range s.Zs {
			for _, b := range s.Bs {
				out = append(out, Problem{p, z, b})
			}
		}
	}
	return out
}
