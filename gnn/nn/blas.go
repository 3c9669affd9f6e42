//go:build blas

package nn

// With the blas build tag, Gorgonia's matrix products run on the system's OpenBLAS
// (Debian: apt-get install libopenblas-dev) through gonum's cgo netlib binding instead of
// gonum's pure-Go GEMM. Build and test with
//
//	go test -tags blas ./gnn/...
//
// Without the tag (the default) everything is pure Go.

// #cgo LDFLAGS: -lopenblas
import "C"

import (
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// BLASBackend names the BLAS implementation Gorgonia's matrix products use.
const BLASBackend = "openblas"

func init() { G.Use(netlib.Implementation{}) }
