package hlo

import (
	"slices"
	"strings"
	"testing"
)

// attentionModule is one head-batched attention over a packed [N·S, D] input ragged by
// lengths: projections (dot, ragged rows), reshape to [N, S, H, d], transpose to
// [N, H, S, d], scores (ragged × ragged), softmax over the keys (reduce, broadcast,
// subtract, exp, divide), context (contracting the keys), transpose and reshape back to
// packed rows; then a sum across the batch (a pad).
func attentionModule(t *testing.T, lengths []int, S int) (*Module, map[string]*Instruction) {
	t.Helper()
	const D, H = 16, 2
	N, d := len(lengths), D/H
	b := NewBuilder("ragged_attention")
	x := b.Param(F32, N*S, D)
	SetRagged(x, Ragged{Dim: 0, Outer: 0, Lengths: lengths})
	w := b.Param(F32, D, D)
	q := b.MatMul(x, w)
	q4 := b.Transpose(b.Reshape(q, N, S, H, d), 0, 2, 1, 3)
	scores := b.Dot(q4, q4, DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}, LhsContracting: []int{3}, RhsContracting: []int{3}})
	mx := b.Reduce(scores, OpMaximum, -1e30, 3)
	e := b.Exp(b.Sub(scores, b.Broadcast(mx, []int{0, 1, 2}, N, H, S, S)))
	p := b.Div(e, b.Broadcast(b.ReduceSum(e, 3), []int{0, 1, 2}, N, H, S, S))
	ctx := b.Dot(p, q4, DotDims{LhsBatch: []int{0, 1}, RhsBatch: []int{0, 1}, LhsContracting: []int{3}, RhsContracting: []int{2}})
	out := b.Reshape(b.Transpose(ctx, 0, 2, 1, 3), N*S, D)
	across := b.ReduceSum(out, 0)
	m, err := b.Build(out, across)
	if err != nil {
		t.Fatal(err)
	}
	return m, map[string]*Instruction{"x": x, "q": q, "q4": q4, "scores": scores, "max": mx, "p": p, "ctx": ctx, "out": out, "across": across}
}

// TestRaggedInference: raggedness goes from the packed input through the projection
// (packed rows), the split into (batch, seq), the scores (seq × seq), the softmax (the
// reduce over the keys keeps the queries ragged), the context (the keys contracted per
// sequence) and back to packed rows; the sum across the batch is an explicit pad.
func TestRaggedInference(t *testing.T) {
	m, in := attentionModule(t, []int{3, 8}, 8)
	ri, err := InferRagged(m)
	if err != nil || ri == nil {
		t.Fatal(ri, err)
	}
	for name, want := range map[string]string{
		"x": "packed=0", "q": "packed=0", "q4": "batch=0,seq=2", "scores": "batch=0,seq=2+3",
		"max": "batch=0,seq=2", "p": "batch=0,seq=2+3", "ctx": "batch=0,seq=2", "out": "packed=0", "across": "dense",
	} {
		if got := ri.Of(in[name]).String(); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if len(ri.Pads) != 1 || ri.Pads[0].Instruction != in["across"].Name || !strings.Contains(ri.Pads[0].Reason, "across the batch") {
		t.Errorf("pads %v, want one at the reduce across the batch", ri.Pads)
	}
}

// TestRaggedTextRoundTrip: the printer writes the attribute, the parser reads it back to
// the same text and the same Ragged.
func TestRaggedTextRoundTrip(t *testing.T) {
	m, _ := attentionModule(t, []int{3, 8}, 8)
	text := m.String()
	if !strings.Contains(text, "ragged={dim=0,outer=0,lengths={3,8}}") {
		t.Fatalf("no ragged attribute in\n%s", text)
	}
	back, err := Parse("ragged.hlo", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != text {
		t.Errorf("round trip changed the text")
	}
	r, ok, err := RaggedOf(back.Entry.Parameters()[0])
	if !ok || err != nil || r.Dim != 0 || r.Outer != 0 || !slices.Equal(r.Lengths, []int{3, 8}) {
		t.Errorf("%+v %v %v", r, ok, err)
	}
	if r2, err := ParseRagged(r.String()); err != nil || r2.String() != r.String() {
		t.Errorf("%v %v", r2, err)
	}
}

// TestRaggedVerify: the verifier refuses, one line each, a length above the extent, a
// zero length, an empty list, an outer extent that is not the count of lengths, a ragged
// attribute off a parameter, and a malformed value.
func TestRaggedVerify(t *testing.T) {
	for _, tc := range []struct {
		attr string
		dims []int
		want string
	}{
		{"{dim=0,outer=0,lengths={3,9}}", []int{16, 4}, "above the extent 8"},
		{"{dim=0,outer=0,lengths={0,8}}", []int{16, 4}, "not an integer >= 1"},
		{"{dim=0,outer=0,lengths={}}", []int{16, 4}, "no lengths"},
		{"{dim=1,outer=0,lengths={3,8}}", []int{3, 8}, "want 2 (one per length)"},
		{"{dim=0,outer=0,lengths={3,8,2}}", []int{16, 4}, "not a multiple of 3"},
		{"{dim=5,outer=0,lengths={3,8}}", []int{16, 4}, "out of range"},
		{"{dim=0,lengths={3,8}}", []int{16, 4}, "dim and outer are both required"},
		{"dim=0", []int{16, 4}, "not in braces"},
	} {
		b := NewBuilder("bad")
		x := b.Param(F32, tc.dims...)
		x.Extra = append(x.Extra, Attr{Key: RaggedAttr, Value: tc.attr})
		m, err := b.Build(b.Exp(x))
		if err == nil {
			err = Verify(m)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s on %v: %v, want one line with %q", tc.attr, tc.dims, err, tc.want)
		}
	}
	b := NewBuilder("off_param")
	x := b.Param(F32, 16, 4)
	y := b.Exp(x)
	SetRagged(y, Ragged{Dim: 0, Outer: 0, Lengths: []int{3, 8}})
	m, err := b.Build(y)
	if err == nil {
		err = Verify(m)
	}
	if err == nil || !strings.Contains(err.Error(), "only the entry's parameters take one") {
		t.Errorf("ragged on exponential: %v", err)
	}
}

// TestInsertRaggedPads: the sum across the batch gets an explicit pad: a RaggedPad
// custom-call between the packed attention output and the reduce, which then reads a
// dense value; the pad survives the text round trip and the verifier, and inserting
// again adds nothing.
func TestInsertRaggedPads(t *testing.T) {
	m, in := attentionModule(t, []int{3, 8}, 8)
	pads, err := InsertRaggedPads(m)
	if err != nil {
		t.Fatal(err)
	}
	across := in["across"]
	if len(pads) != 1 || pads[0].Instruction != across.Name || pads[0].Operand != in["out"].Name || pads[0].Opcode != OpReduce ||
		!strings.Contains(pads[0].Reason, "across the batch") {
		t.Fatalf("pads %v, want one before the reduce across the batch", pads)
	}
	pad := across.Operands[0]
	if !IsRaggedPad(pad) || pad.Name != pads[0].Pad || pad.Operands[0] != in["out"] || !pad.Shape.Equal(in["out"].Shape) {
		t.Fatalf("the reduce reads %s, want the pad of %s", pad.Text(), in["out"].Name)
	}
	ri, err := InferRagged(m)
	if err != nil {
		t.Fatal(err)
	}
	if ri.Of(pad).IsRagged() || !ri.Of(in["out"]).IsRagged() || len(ri.Pads) != 1 || ri.Pads[0] != pads[0] {
		t.Errorf("after the pad: pad %s, out %s, pads %v", ri.Of(pad), ri.Of(in["out"]), ri.Pads)
	}
	if err := Verify(m); err != nil {
		t.Fatal(err)
	}
	text := m.String()
	back, err := Parse("padded.hlo", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if back.String() != text {
		t.Errorf("round trip differs:\n%s\n---\n%s", text, back.String())
	}
	again, err := InsertRaggedPads(back)
	if err != nil || len(again) != 1 || again[0] != pads[0] || back.String() != text {
		t.Errorf("inserting again: %v, %v", again, err)
	}
}
