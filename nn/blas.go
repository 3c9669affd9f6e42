//go:build blas

package nn

// With the blas build tag, Gorgonia's matrix products run on the system's OpenBLAS
// (Debian: apt-get install libopenblas-dev) through gonum's cgo netlib binding instead of
// gonum's pure-Go GEMM. The Makefile builds with the tag whenever the machine has
// OpenBLAS; by hand:
//
//	go test -tags blas ./gnn/...
//
// Without the tag everything is pure Go.
//
// OpenBLAS runs on one thread unless OPENBLAS_NUM_THREADS (or GOTO_NUM_THREADS,
// OMP_NUM_THREADS) says otherwise: these networks' products are small (hundreds of rows
// by 64 to 200 columns), where a second BLAS thread mostly spins waiting — measured on 2
// cores, one thread trained as fast in wall time at about half the CPU time — and the
// training pipeline already keeps the second core busy laying out batches.

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int);
import "C"

import (
	"os"

	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
)

// BLASBackend names the BLAS implementation Gorgonia's matrix products use.
const BLASBackend = "openblas"

func init() {
	G.Use(netlib.Implementation{})
	for _, v := range []string{"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"} {
		if os.Getenv(v) != "" {
			return
		}
	}
	C.openblas_set_num_threads(1)
}
