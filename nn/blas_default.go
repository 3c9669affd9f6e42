//go:build !blas

package nn

// BLASBackend names the BLAS implementation Gorgonia's matrix products use: "go",
// gonum's pure-Go GEMM, unless built with the blas tag (blas.go: "openblas"). The
// Makefile builds with the tag when the machine has OpenBLAS.
const BLASBackend = "go"
