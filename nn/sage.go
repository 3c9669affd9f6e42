package nn

import (
	G "gorgonia.org/gorgonia"
)

// SAGELayer holds the parameter nodes of one GraphSAGE layer: the weight blocks of
// [h, mean_in(h), mean_out(h)] · W, each [H_in, H], and the bias [H].
type SAGELayer struct {
	WSelf, WIn, WOut, B *G.Node
}

// Adjacency is a batch of graphs' neighbour lists as SAGE reads them: In holds DIn
// operand slots per node and Out DOut user slots per node ([N·DIn] and [N·DOut] int
// vectors), −1 for an empty slot; the mean over a node's neighbours is over its
// non-empty slots (zero for none).
type Adjacency struct {
	In, Out   *G.Node
	DIn, DOut int
}

// SAGE applies GraphSAGE layers to node embeddings h [N, H_in]: for each layer,
//
//	h ← ReLU(h·W_self + mean_in(h)·W_in + mean_out(h)·W_out + b)
//
// (the product of [h, mean_in(h), mean_out(h)] with the stacked weights, one matrix
// product), then, when l2Eps > 0, every row h_v ← h_v / √(‖h_v‖² + l2Eps) (GraphSAGE's
// normalization). mean_in and mean_out are the means over a node's operands and users
// (Adjacency). It returns the last layer's [N, H] (h itself for no layers).
//
// Each layer is one fused op (sagefused.go) with a hand-written backward; the op keeps
// its buffers from one run to the next, so a graph built by SAGE must not run
// concurrently with itself (a Gorgonia machine never does).
func SAGE(h *G.Node, adj Adjacency, layers []SAGELayer, l2Eps float64) *G.Node {
	for _, l := range layers {
		h = G.Must(G.ApplyOp(newSageOp(adj.DIn, adj.DOut, l2Eps), h, adj.In, adj.Out, l.WSelf, l.WIn, l.WOut, l.B))
	}
	return h
}

// Neighbours are a graph's padded neighbour lists, the values of an Adjacency: node v's
// operands are In[v·DIn : (v+1)·DIn] and its users Out[v·DOut : (v+1)·DOut], −1 for an
// empty slot.
type Neighbours struct {
	In, Out   []int
	DIn, DOut int
}

// NeighboursOf returns the neighbour lists of a graph of n nodes with edges src[j] →
// dst[j] (src[j] is an operand of dst[j], in edge order; an edge listed twice counts
// twice), at most maxDegree per node and direction (CapDegree's evenly spaced choice when
// a node has more; maxDegree ≤ 0: no cap). DIn and DOut are the largest counts, at least 1.
func NeighboursOf(n int, src, dst []int32, maxDegree int) Neighbours {
	ins, outs := make([][]int32, n), make([][]int32, n)
	for j := range src {
		ins[dst[j]] = append(ins[dst[j]], src[j])
		outs[src[j]] = append(outs[src[j]], dst[j])
	}
	pad := func(lists [][]int32) ([]int, int) {
		d := 1
		for v, l := range lists {
			if maxDegree > 0 {
				lists[v] = CapDegree(l, maxDegree)
			}
			d = max(d, len(lists[v]))
		}
		out := make([]int, n*d)
		for i := range out {
			out[i] = -1
		}
		for v, l := range lists {
			for k, u := range l {
				out[v*d+k] = int(u)
			}
		}
		return out, d
	}
	var nb Neighbours
	nb.In, nb.DIn = pad(ins)
	nb.Out, nb.DOut = pad(outs)
	return nb
}

// CapDegree returns l when it has at most max entries, else max of them evenly spaced,
// l[i·len(l)/max] for i < max (GraphSAGE's fixed-size neighbourhoods, deterministic).
func CapDegree[T any](l []T, max int) []T {
	if len(l) <= max {
		return l
	}
	out := make([]T, max)
	for i := range out {
		out[i] = l[i*len(l)/max]
	}
	return out
}

// Const returns the neighbour lists as constant int vector nodes of g (Adjacency), for
// graphs built for one input.
func (nb Neighbours) Const(g *G.ExprGraph) Adjacency {
	return Adjacency{In: IntConst(g, "adj_in", nb.In), Out: IntConst(g, "adj_out", nb.Out), DIn: nb.DIn, DOut: nb.DOut}
}
