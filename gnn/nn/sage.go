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
// (the product of [h, mean_in(h), mean_out(h)] with one weight matrix, computed as three
// products: no concatenation), then, when l2Eps > 0, every row h_v ← h_v / √(‖h_v‖² + l2Eps)
// (GraphSAGE's normalization). mean_in and mean_out are the means over a node's operands
// and users (Adjacency). It returns the last layer's [N, H] (h itself for no layers).
func SAGE(h *G.Node, adj Adjacency, layers []SAGELayer, l2Eps float64) *G.Node {
	for _, l := range layers {
		ain := Gather(h, adj.In, ReduceMean, adj.DIn)
		aout := Gather(h, adj.Out, ReduceMean, adj.DOut)
		z := G.Must(G.Add(G.Must(G.Add(G.Must(G.Mul(h, l.WSelf)), G.Must(G.Mul(ain, l.WIn)))), G.Must(G.Mul(aout, l.WOut))))
		h = ReLU(Bias(z, l.B))
		if l2Eps > 0 {
			h = L2Norm(h, l2Eps)
		}
	}
	return h
}
