package features

import (
	"os"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// smallModule has one of each way of calling a computation: a while (condition and
// body), a call inside the body, a fusion and a reduce with a reducer.
const smallModule = `HloModule small

%add_f (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%callee (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%p)
}

%fused (fp: f32[4]) -> f32[4] {
  %fp = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%fp)
}

%cond (c: (s32[], f32[4])) -> pred[] {
  %c = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %k = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %k), direction=LT
}

%body (b: (s32[], f32[4])) -> (s32[], f32[4]) {
  %b = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%b), index=0
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %v = f32[4]{0} get-tuple-element(%b), index=1
  %cv = f32[4]{0} call(%v), to_apply=%callee
  ROOT %t = (s32[], f32[4]{0}) tuple(%i1, %cv)
}

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %z = s32[] constant(0)
  %t0 = (s32[], f32[4]{0}) tuple(%z, %x)
  %w = (s32[], f32[4]{0}) while(%t0), condition=%cond, body=%body
  %v = f32[4]{0} get-tuple-element(%w), index=1
  %f = f32[4]{0} fusion(%v), kind=kLoop, calls=%fused
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(%f, %zero), dimensions={0}, to_apply=%add_f
}
`

// edgeNames lists g's edges as "comp/src -> comp/dst", in order.
func edgeNames(g *ModuleGraph) []string {
	comp := map[*hlo.Instruction]string{}
	for _, c := range g.Computations {
		for _, in := range c.Instructions {
			comp[in] = c.Name
		}
	}
	name := func(i int32) string { in := g.Nodes[i]; return comp[in] + "/" + in.Name }
	var out []string
	for j := range g.Src {
		out = append(out, name(g.Src[j])+" -> "+name(g.Dst[j]))
	}
	return out
}

func compNames(g *ModuleGraph) []string {
	var out []string
	for _, c := range g.Computations {
		out = append(out, c.Name)
	}
	return out
}

// TestModuleGraphPolicies checks the three edge policies on a module with every kind of
// callee, edge by edge (hand-derived from the text above), and the graph's indices.
func TestModuleGraphPolicies(t *testing.T) {
	m, err := hlo.Parse("small", []byte(smallModule))
	if err != nil {
		t.Fatal(err)
	}
	operands := []string{ // every policy's operand -> user edges, by computation
		"cond/c -> cond/i", "cond/i -> cond/lt", "cond/k -> cond/lt",
		"body/b -> body/i", "body/i -> body/i1", "body/one -> body/i1", "body/b -> body/v", "body/v -> body/cv",
		"body/i1 -> body/t", "body/cv -> body/t",
		"main/z -> main/t0", "main/x -> main/t0", "main/t0 -> main/w", "main/w -> main/v", "main/v -> main/f",
		"main/f -> main/r", "main/zero -> main/r",
	}
	reducerEtc := []string{"add_f/a -> add_f/s", "add_f/b -> add_f/s", "callee/p -> callee/n", "fused/fp -> fused/e"}
	for _, c := range []struct {
		name   string
		policy EdgePolicy
		comps  []string
		edges  []string
	}{
		{"operand edges", OperandEdges(), []string{"add_f", "callee", "fused", "cond", "body", "main"},
			append(append(reducerEtc[:3:3], reducerEtc[3]), operands...)},
		{"dataflow edges", DataflowEdges(), []string{"main", "cond", "body", "callee"}, []string{
			"main/z -> main/t0", "main/x -> main/t0",
			"main/t0 -> main/w", "main/t0 -> cond/c", "main/t0 -> body/b", "body/t -> main/w", // the while: in through both parameters, out of the body
			"main/w -> main/v", "main/v -> main/f", "main/f -> main/r", "main/zero -> main/r", // no edge into the fusion or the reducer: not nodes
			"cond/c -> cond/i", "cond/i -> cond/lt", "cond/k -> cond/lt",
			"body/b -> body/i", "body/i -> body/i1", "body/one -> body/i1", "body/b -> body/v",
			"body/v -> body/cv", "body/v -> callee/p", "callee/n -> body/cv", // the call
			"body/i1 -> body/t", "body/cv -> body/t",
			"callee/p -> callee/n",
		}},
		{"callee root edges", CalleeRootEdges(), []string{"add_f", "callee", "fused", "cond", "body", "main"},
			append(append(append(reducerEtc[:3:3], reducerEtc[3]), operands...),
				"callee/n -> body/cv", "body/t -> main/w", "cond/lt -> main/w", "fused/e -> main/f", "add_f/s -> main/r")},
	} {
		g, err := BuildModuleGraph(m, c.policy)
		if err != nil {
			t.Fatal(err)
		}
		if got := compNames(g); !slices.Equal(got, c.comps) {
			t.Errorf("%s: computations %v, want %v", c.name, got, c.comps)
		}
		got := edgeNames(g)
		if !slices.Equal(got, c.edges) {
			t.Errorf("%s: edges\n%v\nwant\n%v", c.name, got, c.edges)
		}
		checkIndices(t, c.name, g)
	}
	g, _ := BuildModuleGraph(m, DataflowEdges())
	for _, c := range g.Computations {
		if want := c.Name == "cond" || c.Name == "body" || c.Name == "callee"; g.InLoop[c] != want {
			t.Errorf("InLoop[%s] = %v, want %v", c.Name, g.InLoop[c], want)
		}
	}
}

// checkIndices checks Start, Index and OutDegree against the nodes and edges.
func checkIndices(t *testing.T, what string, g *ModuleGraph) {
	t.Helper()
	if len(g.Start) != len(g.Computations)+1 || int(g.Start[len(g.Computations)]) != len(g.Nodes) {
		t.Fatalf("%s: Start %v for %d computations of %d nodes", what, g.Start, len(g.Computations), len(g.Nodes))
	}
	deg := make([]int, len(g.Nodes))
	for _, s := range g.Src {
		deg[s]++
	}
	if !slices.Equal(deg, g.OutDegree) {
		t.Errorf("%s: OutDegree %v, the edges give %v", what, g.OutDegree, deg)
	}
	for ci, c := range g.Computations {
		for i, in := range c.Instructions {
			if n := g.Start[ci] + int32(i); g.Nodes[n] != in || g.Index[in] != n {
				t.Errorf("%s: %s/%s is not node %d", what, c.Name, in.Name, n)
			}
		}
	}
}

// TestModuleGraphRealModules: on real XLA modules (a scan whose body calls a
// computation, an activation-offloading Llama with nested loops and a ResNet with
// fusions and reducers), each policy's edge count is what its rules add up to, counted
// independently of the builder, and its indices are consistent.
func TestModuleGraphRealModules(t *testing.T) {
	for _, f := range []string{"bench_scan_N2000_M3.hlo", "llama3_8b_bf16_activation_offloading_1x8.hlo", "resnet50_keras_jax_f32.hlo"} {
		src, err := os.ReadFile("../compiler/hlo/testdata/real/" + f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := hlo.Parse(f, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name   string
			policy EdgePolicy
		}{{"operand", OperandEdges()}, {"dataflow", DataflowEdges()}, {"callee root", CalleeRootEdges()}} {
			g, err := BuildModuleGraph(m, p.policy)
			if err != nil {
				t.Fatal(err)
			}
			checkIndices(t, f+" "+p.name, g)
			in := map[*hlo.Computation]bool{}
			for _, c := range g.Computations {
				in[c] = true
			}
			want, calls := 0, 0
			for _, c := range g.Computations {
				for _, x := range c.Instructions {
					want += len(x.Operands)
					switch p.name {
					case "dataflow":
						if x.Opcode == hlo.OpCall && in[x.Calls] {
							want += params(x.Calls, len(x.Operands)) + 1
							calls++
						}
						if x.Opcode == hlo.OpWhile {
							want += params(x.Condition, len(x.Operands)) + params(x.Body, len(x.Operands)) + 1
							calls++
						}
					case "callee root":
						for _, callee := range []*hlo.Computation{x.Calls, x.Body, x.Condition, x.ToApply} {
							if callee != nil && in[callee] {
								want++
								calls++
							}
						}
					}
				}
			}
			if len(g.Src) != want {
				t.Errorf("%s %s: %d edges, want %d", f, p.name, len(g.Src), want)
			}
			if p.name != "operand" && calls == 0 {
				t.Errorf("%s %s: no callee in the module: the test checks nothing", f, p.name)
			}
			t.Logf("%s %s: %d computations, %d nodes, %d edges (%d callers)", f, p.name, len(g.Computations), len(g.Nodes), len(g.Src), calls)
		}
	}
}

// params counts c's parameters numbered below n.
func params(c *hlo.Computation, n int) int {
	k := 0
	for _, in := range c.Instructions {
		if in.Opcode == hlo.OpParameter && in.ParamNum < n {
			k++
		}
	}
	return k
}
