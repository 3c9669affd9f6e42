//go:build !blas

package nn

// BLASBackend names the BLAS implementation Gorgonia's matrix products use: gonum's
// pure-Go GEMM unless built with the blas tag (see blas.go).
const BLASBackend = "gonum"
