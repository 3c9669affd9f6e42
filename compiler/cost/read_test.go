package cost

import (
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// ReadBytes charges a gathered table the rows the kernel gathers, whatever the table's
// size; an operand updated in place nothing; any other input all of it.
func TestReadBytes(t *testing.T) {
	const rows, width = 16, 128 // 16 gathered rows of 128 f32: a whole number of (8,128) tiles
	gathered := float64(rows * width * 4)
	for _, vocab := range []int{1000, 100000} {
		// A loop kernel (an embedding lookup and an activation) and a reduce kernel (an
		// embedding bag: the gathered rows summed).
		b := hlo.NewBuilder("loop")
		loop := kernel(t, b, b.Exp(b.Gather(b.Param(hlo.F32, vocab, width), b.Param(hlo.S32, rows))))
		b = hlo.NewBuilder("bag")
		bag := kernel(t, b, b.ReduceSum(b.Gather(b.Param(hlo.F32, vocab, width), b.Param(hlo.S32, rows)), 0))
		for _, k := range []*KernelInfo{loop, bag} {
			table, idx := k.Inputs[0], k.Inputs[1]
			if table.Role != RoleGather {
				t.Fatalf("%s kernel, vocabulary %d: table role %s, want gather", k.Kind, vocab, table.Role)
			}
			if l, p := k.ReadBytes(table, v4); l != gathered || p != gathered {
				t.Errorf("%s kernel, vocabulary %d: table reads %v logical, %v padded bytes; want %v (the gathered rows)", k.Kind, vocab, l, p, gathered)
			}
			if l, p := k.ReadBytes(idx, v4); l != idx.Bytes || p != idx.Padded {
				t.Errorf("%s kernel: indices read %v, %v bytes; want all of them (%v, %v)", k.Kind, l, p, idx.Bytes, idx.Padded)
			}
		}
	}
	// The gradient of a lookup: the table is updated in place, only the updates are read.
	b := hlo.NewBuilder("scatter")
	k := kernel(t, b, b.ScatterAdd(b.Param(hlo.F32, 100000, width), b.Param(hlo.S32, rows), b.Param(hlo.F32, rows, width)))
	if k.Inputs[0].Role != RoleAliased {
		t.Fatalf("scatter operand role %s, want aliased", k.Inputs[0].Role)
	}
	if l, p := k.ReadBytes(k.Inputs[0], v4); l != 0 || p != 0 {
		t.Errorf("an operand updated in place reads %v, %v bytes; want 0", l, p)
	}
	if l, _ := k.ReadBytes(k.Inputs[2], v4); l != gathered {
		t.Errorf("scatter updates read %v bytes, want %v", l, gathered)
	}
}

// TestVariadicScatter: XLA's scatter of N arrays (N inputs, the indices, N updates; a
// tuple result) updates every input in place and reads and writes every update's rows,
// as N single scatters sharing the indices would.
func TestVariadicScatter(t *testing.T) {
	const rows, width = 16, 128
	m, err := hlo.ParseFile("../hlo/testdata/variadic_scatter.hlo")
	if err != nil {
		t.Fatal(err)
	}
	k, err := Analyze(m.Entry, v4)
	if err != nil {
		t.Fatal(err)
	}
	upd := float64(rows * width * 4)
	for i, in := range k.Inputs {
		l, _ := k.ReadBytes(in, v4)
		switch {
		case i < 2 && (in.Role != RoleAliased || l != 0):
			t.Errorf("input %d: role %s, reads %v bytes; want aliased, 0", i, in.Role, l)
		case i >= 3 && l != upd:
			t.Errorf("update %d reads %v bytes, want %v", i-3, l, upd)
		}
	}
	if k.Output.Bytes != 2*upd {
		t.Errorf("writes %v bytes, want both updates' %v", k.Output.Bytes, 2*upd)
	}
	if c := Of(m.Entry.Root); c.BytesWritten != 2*upd || c.Flops != 2*rows*width {
		t.Errorf("op cost writes %v bytes with %v flops, want %v and %v", c.BytesWritten, c.Flops, 2*upd, 2*rows*width)
	}
}
