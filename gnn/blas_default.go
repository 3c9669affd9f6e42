//go:build !blas

package gnn

// BLASBackend names the BLAS implementation the model's matrix products use: gonum's
// pure-Go GEMM unless built with the blas tag (see blas.go).
const BLASBackend = "gonum"
