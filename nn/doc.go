// Package nn is the graph-building machinery that tpucost's Gorgonia networks share: the
// learned cost model (package gnn), the tuner's RL policy (tune) and the pass-ordering
// agent (gym). It knows nothing of kernels, datasets, losses or checkpoints' layout.
//
// # Contract
//
//   - Parameters (Param, Params) are named row-major float32 tensors in a fixed order.
//     A network binds them to its parameter nodes without copying (ParamNode), so an
//     optimizer update of Params is seen by every graph built on them. The tensor file
//     format (WriteTensors, ReadTensors) is stable: files written by earlier versions
//     read back bit for bit.
//   - Adam updates Params in place from one gradient slice per parameter, in Params order
//     (nil: the parameter was not read and neither it nor its moments change), optionally
//     clipping the gradients' global L2 norm first (ClipNorm). Its moments and step are
//     saved and restored as named tensors (State, Restore) so that a resumed run
//     continues exactly where it stopped. The update is computed in float64 per element
//     and is deterministic.
//   - Linear is a fully connected layer, act(a + Σ x_i·w_i + b), as one fused op (one
//     matrix product over the concatenated inputs, a hand-written backward), checked
//     against finite differences and the separate ops; like SAGE's layers it reuses its
//     buffers from run to run.
//   - The ops (Gather, Bias, ReLU, L2Norm) are Gorgonia ops with analytic
//     gradients, for float32 and float64 graphs, checked against finite differences in
//     this package's tests. Index inputs are []int; index −1 is padding. Op identities
//     (String, Hashcode) depend only on the op's parameters. OpBase and the value helpers
//     (Floats, Dense, MapRows, ShapeOf, TensorType) let other packages write their own
//     ops (the cost model's losses) the same way.
//   - SAGE is the GraphSAGE layer stack: for each layer,
//     h ← ReLU(h·W_self + mean_in(h)·W_in + mean_out(h)·W_out + b), then optionally
//     h ← h / √(‖h‖² + ε) per row, the neighbour means read from padded index lists.
//     Every network that reads a graph through GraphSAGE calls it. Each layer is one
//     fused op with a hand-written backward (checked against finite differences and
//     against the composition of the separate ops); it reuses its buffers from run to
//     run, so one graph's machine must not run concurrently with itself.
//   - Matrix products run on gonum's pure-Go BLAS, or on OpenBLAS when built with the
//     blas tag (blas.go); BLASBackend names the one in use. Either gives the same
//     results up to floating-point summation order, which a given build keeps fixed.
package nn
