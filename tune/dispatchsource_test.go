//go:build unix

package tune

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/zoo"
)

// TestDispatchSourceReadsConfigOnce: DispatchSource reads --config once to tell a dispatch
// table from a compiler config, and compiles a config with what it read, so a config
// given as a FIFO (--config <(...)) works: a second read would find the pipe empty.
func TestDispatchSourceReadsConfigOnce(t *testing.T) {
	const src = "mlp_96x2_b1"
	m, err := zoo.Resolve(src)
	if err != nil {
		t.Fatal(err)
	}
	opts := compiler.Options{Target: testChip(t).Target}
	def, err := compiler.Compile(m, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := def.Config.MarshalIndent()
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "config.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	again := func(string, string, string, compiler.Options) (*compiler.Program, error) {
		t.Error("DispatchSource handed a config it had read to compile, which reads it again")
		return nil, os.ErrInvalid
	}
	p, err := DispatchSource(context.Background(), again)(src, "", fifo, opts)
	if err != nil {
		t.Fatalf("compiling with a FIFO config: %v", err)
	}
	if len(p.Kernels) != len(def.Kernels) {
		t.Errorf("%d kernels with the default's own config, want %d", len(p.Kernels), len(def.Kernels))
	}
}
