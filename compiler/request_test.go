package compiler

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

const requestHLO = "HloModule m\n\nENTRY main {\n  a = f32[256,256] parameter(0)\n  b = f32[256,256] parameter(1)\n" +
	"  d = f32[256,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  ROOT r = f32[256,256] add(d, a)\n}\n"

// TestCompileRequest: --passes and --out are checked before the module is loaded; the
// effective config is written to Out and reproduces the program; with --dump-after the
// result holds the HLO text, which its text form prints instead of the kernel table.
func TestCompileRequest(t *testing.T) {
	loads := 0
	load := func(src, shapes string) (*hlo.Module, error) {
		if src != "m.hlo" || shapes != "" {
			t.Errorf("Load(%q, %q): want the request's Src and Shapes", src, shapes)
		}
		loads++
		return hlo.Parse(src, []byte(requestHLO))
	}
	target := testTarget
	dir := t.TempDir()
	notConfig := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notConfig, []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    CompileRequest
		want string
	}{
		{CompileRequest{Passes: "no-such-pass"}, `--passes "no-such-pass": `},
		{CompileRequest{Out: notConfig}, "--out"},
		{CompileRequest{DumpAfter: "no-such-pass"}, `--dump-after "no-such-pass": no such pass`},
	} {
		c.r.Src, c.r.Load = "m.hlo", load
		if _, err := c.r.Compile(t.Context(), target, "v4"); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error starting %q", c.r, err, c.want)
		}
	}
	if loads != 1 {
		t.Errorf("the module was loaded %d times, want once (only once --passes and --out passed)", loads)
	}

	out := filepath.Join(dir, "cfg.json")
	res, err := CompileRequest{Src: "m.hlo", Out: out, Load: load}.Compile(t.Context(), target, "v4")
	if err != nil {
		t.Fatal(err)
	}
	if res.Chip != "v4" || len(res.Kernels) == 0 || res.HLO != "" {
		t.Errorf("result %+v: want v4's kernels and no HLO", res)
	}
	again, err := CompileRequest{Src: "m.hlo", Config: out, Load: load}.Compile(t.Context(), target, "v4")
	if err != nil || len(again.Kernels) != len(res.Kernels) {
		t.Errorf("the written config compiles to %d kernels (%v), want %d", len(again.Kernels), err, len(res.Kernels))
	}

	res, err = CompileRequest{Src: "m.hlo", DumpAfter: "fusion", Load: load}.Compile(t.Context(), target, "v4")
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.HLO, "HloModule") || text.String() != res.HLO {
		t.Errorf("--dump-after fusion: HLO %q, text %q: want the module's HLO text as the text output", res.HLO, text.String())
	}

	// Streamed (the CLI's text output): the text reaches Dump during the compile, before
	// the result exists, and the result keeps none of it.
	var streamed bytes.Buffer
	res, err = CompileRequest{Src: "m.hlo", DumpAfter: "fusion", Dump: &streamed, Load: load}.Compile(t.Context(), target, "v4")
	if err != nil {
		t.Fatal(err)
	}
	if streamed.String() != text.String() || res.HLO != "" {
		t.Errorf("streamed dump %d bytes (result keeps %d), want the %d bytes of the kept one and none kept", streamed.Len(), len(res.HLO), text.Len())
	}
}
