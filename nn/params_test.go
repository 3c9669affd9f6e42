package nn

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTensorFileFormat pins the tensor file format byte for byte: checkpoints written by
// earlier versions must keep loading.
func TestTensorFileFormat(t *testing.T) {
	ts := Params{
		{Name: "w", Shape: []int{2, 1}, Data: []float32{1, -2}},
		{Name: "b", Shape: []int{1}, Data: []float32{0.5}},
	}
	var buf bytes.Buffer
	if err := WriteTensors(&buf, 7, ts); err != nil {
		t.Fatal(err)
	}
	const want = "545043474e4e0001" + "0700000000000000" + "02000000" +
		"0100" + "77" + "02" + "02000000" + "01000000" + "0000803f" + "000000c0" +
		"0100" + "62" + "01" + "01000000" + "0000003f"
	if got := hex.EncodeToString(buf.Bytes()); got != want {
		t.Fatalf("tensor file\n got %s\nwant %s", got, want)
	}
	step, back, err := ReadTensors(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if step != 7 || ts.SameLayout(back) != nil || !bytes.Equal(ts.Bytes(), back.Bytes()) {
		t.Errorf("read back step %d, %v", step, back)
	}
	for _, bad := range [][]byte{buf.Bytes()[:10], append(append([]byte(nil), buf.Bytes()...), 0), []byte("NOTATENSORFILE......")} {
		if _, _, err := ReadTensors(bytes.NewReader(bad)); err == nil {
			t.Errorf("read a damaged file of %d bytes", len(bad))
		}
	}
}

func TestParams(t *testing.T) {
	ps := Params{NewParam("a", 2, 3), NewParam("b", 3)}
	if ps.Count() != 9 || len(ps[0].Data) != 6 {
		t.Fatalf("count %d", ps.Count())
	}
	ps[0].Data[1] = 4
	c := ps.Clone()
	c[0].Data[1] = 5
	if ps[0].Data[1] != 4 {
		t.Error("Clone shares storage")
	}
	if err := ps.CopyFrom(c); err != nil || ps[0].Data[1] != 5 {
		t.Errorf("CopyFrom: %v", err)
	}
	if err := ps.CopyFrom(Params{NewParam("a", 2, 3), NewParam("b", 4)}); err == nil {
		t.Error("CopyFrom accepted another layout")
	}
}

// TestAdam checks two steps against the formula, that nil gradients leave a parameter
// and its moments alone, global-norm clipping, and that State/Restore continue exactly.
func TestAdam(t *testing.T) {
	ps := Params{{Name: "x", Shape: []int{2}, Data: []float32{1, 1}}, {Name: "y", Shape: []int{1}, Data: []float32{3}}}
	a := NewAdam(ps, 0.1)
	grads := [][]float32{{0.5, -2}, nil}
	a.Update(ps, grads)
	// Step 1: m̂ = g, v̂ = g², so each entry moves by lr·g/(|g| + ε) ≈ ±lr.
	for j, want := range []float64{1 - 0.1*0.5/(0.5+1e-8), 1 + 0.1*2/(2+1e-8)} {
		if math.Abs(float64(ps[0].Data[j])-want) > 1e-6 {
			t.Errorf("x[%d] = %v, want %v", j, ps[0].Data[j], want)
		}
	}
	if ps[1].Data[0] != 3 || a.m[1].Data[0] != 0 {
		t.Error("a parameter without gradient changed")
	}
	saved := a.State()
	b := NewAdam(ps.Clone(), 0.1)
	if err := b.Restore(a.Step(), Params(saved).Clone()); err != nil {
		t.Fatal(err)
	}
	pa, pb := ps, ps.Clone()
	a.Update(pa, grads)
	b.Update(pb, grads)
	if !bytes.Equal(pa.Bytes(), pb.Bytes()) || a.Step() != 2 || b.Step() != 2 {
		t.Error("a restored optimizer does not continue exactly")
	}
	if err := b.Restore(1, saved[:1]); err == nil {
		t.Error("Restore accepted missing moments")
	}

	// Clipping: gradient (3, 4) has norm 5; clipped to 1 it is (0.6, 0.8), whose first
	// Adam step is the same as the unclipped one's (Adam is scale-invariant at step 1) but
	// whose moments are scaled.
	c := Params{{Name: "z", Shape: []int{2}, Data: []float32{0, 0}}}
	ac := NewAdam(c, 0.1)
	ac.ClipNorm = 1
	ac.Update(c, [][]float32{{3, 4}})
	if m := ac.m[0].Data; math.Abs(float64(m[0])-0.06) > 1e-7 || math.Abs(float64(m[1])-0.08) > 1e-7 {
		t.Errorf("clipped first moment %v, want [0.06 0.08]", m)
	}
	if GradNorm([][]float32{{3, 4}, nil, {0}}) != 5 {
		t.Error("GradNorm")
	}
}

// TestAdamSplitSameBytes checks that Update's two-goroutine loop (a model above
// adamSplitMin elements, the halves meeting inside a tensor, a nil gradient between)
// gives the same bytes as one loop over every element, over three steps.
func TestAdamSplitSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ps := Params{NewParam("a", 3000, 3), NewParam("skip", 100), NewParam("b", 7, 1000), NewParam("c", 11)}
	for _, p := range ps {
		Uniform(p.Data, 1, rng)
	}
	split, one := NewAdam(ps, 0.01), NewAdam(ps.Clone(), 0.01)
	psOne := ps.Clone()
	for step := range 3 {
		grads := make([][]float32, len(ps))
		n := 0
		for i, p := range ps {
			if p.Name == "skip" {
				continue
			}
			grads[i] = make([]float32, len(p.Data))
			Uniform(grads[i], 1, rng)
			n += len(p.Data)
		}
		if n < adamSplitMin {
			t.Fatalf("test model of %d updated elements does not reach adamSplitMin %d", n, adamSplitMin)
		}
		split.Update(ps, grads)
		one.step++
		c1, c2 := 1-math.Pow(one.Beta1, float64(one.step)), 1-math.Pow(one.Beta2, float64(one.step))
		one.updateRange(psOne, grads, 0, n, 1, c1, c2)
		if !bytes.Equal(ps.Bytes(), psOne.Bytes()) || !bytes.Equal(split.State().Bytes(), one.State().Bytes()) {
			t.Fatalf("step %d: the split update differs from one loop", step+1)
		}
	}
}

// adamFloat32Tol bounds how far the float32 update (hoisted constants α, ε̂; see Adam)
// drifts from the textbook formula evaluated in float64 over adamRefSteps steps on
// parameters of order 1: float32 rounds each of the dozen operations of a step to 2⁻²⁴
// (6e-8) relative, and each step's parameter, of order 1, is rounded to float32 again;
// 20 steps accumulate a few 1e-6 at most.
const (
	adamFloat32Tol = 1e-5
	adamRefSteps   = 20
)

// TestAdamMatchesFloat64Formula checks Update against the textbook Adam in float64
// (m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ), θ ← θ − lr·m̂/(√v̂ + ε)) over adamRefSteps steps with
// random gradients of several scales, including tiny ones where ε matters.
func TestAdamMatchesFloat64Formula(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 64
	ps := Params{NewParam("p", n)}
	Uniform(ps[0].Data, 1, rng)
	ref := make([]float64, n)
	for i, x := range ps[0].Data {
		ref[i] = float64(x)
	}
	init := slices.Clone(ref)
	m, v := make([]float64, n), make([]float64, n)
	a := NewAdam(ps, 0.01)
	for step := 1; step <= adamRefSteps; step++ {
		g := make([]float32, n)
		for i := range g {
			scale := []float32{1, 1e-3, 1e-7}[i%3]
			g[i] = scale * float32(2*rng.Float64()-1)
		}
		a.Update(ps, [][]float32{g})
		c1, c2 := 1-math.Pow(a.Beta1, float64(step)), 1-math.Pow(a.Beta2, float64(step))
		for i := range ref {
			gi := float64(g[i])
			m[i] = a.Beta1*m[i] + (1-a.Beta1)*gi
			v[i] = a.Beta2*v[i] + (1-a.Beta2)*gi*gi
			ref[i] -= a.LR * (m[i] / c1) / (math.Sqrt(v[i]/c2) + a.Eps)
		}
	}
	var moved float64
	for i, x := range ps[0].Data {
		if d := math.Abs(float64(x) - ref[i]); d > adamFloat32Tol {
			t.Errorf("p[%d] = %.9g, the float64 formula gives %.9g (off by %g)", i, x, ref[i], d)
		}
		moved = math.Max(moved, math.Abs(ref[i]-init[i]))
	}
	// The steps must move the parameters far more than the tolerance (about lr per step),
	// or the comparison says nothing.
	if moved < 100*adamFloat32Tol {
		t.Errorf("the parameters moved at most %g in %d steps", moved, adamRefSteps)
	}
}
