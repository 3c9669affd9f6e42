package tpugraphs

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fixtures in testdata were written by NumPy (testdata/gen_npz.py); the values
// below are the ones that script writes.

func wantDtypeValues(key string) any {
	switch key {
	case "b1":
		return []int64{0, 1, 0, 1, 0, 1}
	case "i1", "i2", "i4", "i8":
		return []int64{-3, -2, -1, 0, 1, 2}
	case "u1", "u2", "u4", "u8":
		return []int64{0, 1, 2, 3, 4, 5}
	case "f4":
		return []float32{0.5, 1.5, 2.5, 3.5, 4.5, 5.5}
	case "f8":
		return []float64{0.25, 1.25, 2.25, 3.25, 4.25, 5.25}
	}
	return nil
}

func values(a *Array) any {
	switch {
	case a.Ints != nil:
		return a.Ints
	case a.F32 != nil:
		return a.F32
	default:
		return a.F64
	}
}

func TestReadEveryDtypeAndOrder(t *testing.T) {
	for _, file := range []string{"dtypes.npz", "fortran_be.npz"} {
		z, err := ReadNPZFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"} {
			a := z[key]
			if a == nil {
				t.Fatalf("%s: no %s", file, key)
			}
			if !reflect.DeepEqual(a.Shape, []int{2, 3}) {
				t.Errorf("%s %s: shape %v, want [2 3]", file, key, a.Shape)
			}
			if got, want := values(a), wantDtypeValues(key); !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s (%s): values %v, want %v", file, key, a.Descr, got, want)
			}
		}
	}
	z, err := ReadNPZFile("testdata/fortran_be.npz")
	if err != nil {
		t.Fatal(err)
	}
	if d := z["i4"].Descr; d != ">i4" {
		t.Errorf("fortran_be i4 descr %q, want >i4 (the fixture must be big endian)", d)
	}
	f3 := z["f3d"]
	for i, v := range f3.Ints { // np.arange(24).reshape(2,3,4): C index i holds i
		if v != int64(i) {
			t.Fatalf("f3d[%d] = %d, want %d (Fortran order not transposed)", i, v, i)
		}
	}
	if !reflect.DeepEqual(z["v1d"].F64, []float64{0, 1, 2, 3, 4}) {
		t.Errorf("v1d = %v", z["v1d"].F64)
	}
}

func TestReadTileAndLayoutFixtures(t *testing.T) {
	z, err := ReadNPZFile("testdata/tile_small.npz")
	if err != nil {
		t.Fatal(err)
	}
	if got := z.Keys(); !reflect.DeepEqual(got, []string{"config_feat", "config_runtime", "config_runtime_normalizers", "edge_index", "node_feat", "node_opcode"}) {
		t.Fatalf("keys %v", got)
	}
	if !reflect.DeepEqual(z["node_feat"].Shape, []int{5, 140}) || z["node_feat"].F32[141] != 14.1 {
		t.Errorf("node_feat shape %v [1,1]=%v, want [5 140] and 14.1", z["node_feat"].Shape, z["node_feat"].F32[141])
	}
	if !reflect.DeepEqual(z["node_opcode"].Ints, []int64{1, 63, 24, 24, 88}) || z["node_opcode"].Descr != "|u1" {
		t.Errorf("node_opcode %v %s", z["node_opcode"].Ints, z["node_opcode"].Descr)
	}
	if !reflect.DeepEqual(z["edge_index"].Ints, []int64{1, 0, 2, 1, 3, 1, 4, 2}) {
		t.Errorf("edge_index (Fortran in the file) %v", z["edge_index"].Ints)
	}
	if !reflect.DeepEqual(z["config_runtime"].Ints, []int64{1000, 2500, 1750}) {
		t.Errorf("config_runtime %v", z["config_runtime"].Ints)
	}
	l, err := ReadNPZFile("testdata/layout_small.npz")
	if err != nil {
		t.Fatal(err)
	}
	ncf := l["node_config_feat"]
	if !reflect.DeepEqual(ncf.Shape, []int{3, 2, 18}) || ncf.F32[2*36+18+5] != 2 || ncf.F32[6] != -1 {
		t.Errorf("node_config_feat shape %v", ncf.Shape)
	}
	if !reflect.DeepEqual(l["node_config_ids"].Ints, []int64{1, 3}) {
		t.Errorf("node_config_ids %v", l["node_config_ids"].Ints)
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	in := NPZ{
		"a":  {Shape: []int{2, 2}, F32: []float32{1, -2, 3.5, 4}},
		"b":  {Shape: []int{3}, Descr: "|u1", Ints: []int64{0, 200, 255}},
		"c":  {Shape: []int{1, 3}, Descr: "<i2", Ints: []int64{-32768, 0, 32767}},
		"d":  {Shape: []int{2}, F64: []float64{1e300, -0.5}},
		"e":  {Shape: []int{0, 140}, F32: []float32{}},
		"sc": {Shape: []int{}, Descr: "<i8", Ints: []int64{7}},
	}
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		if err := EncodeNPZ(&buf, in, compress); err != nil {
			t.Fatal(err)
		}
		out, err := DecodeNPZ("mem", buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for k, a := range in {
			if !reflect.DeepEqual(out[k].Shape, a.Shape) || fmt.Sprint(values(out[k])) != fmt.Sprint(values(a)) {
				t.Errorf("compress=%v %s: got %v %v, want %v %v", compress, k, out[k].Shape, values(out[k]), a.Shape, values(a))
			}
		}
		var again bytes.Buffer
		if err := EncodeNPZ(&again, in, compress); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), again.Bytes()) {
			t.Errorf("compress=%v: two encodings differ", compress)
		}
	}
	if err := EncodeNPZ(&bytes.Buffer{}, NPZ{"x": {Shape: []int{1}, Descr: "|u1", Ints: []int64{256}}}, false); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("256 as u1: err %v, want a range error", err)
	}
}

// npyBytes builds a .npy member by hand (independent of the writer).
func npyBytes(major byte, dict string, body []byte) []byte {
	b := []byte(npyMagic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(dict)+1))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(dict)+1))
	}
	b = append(b, dict...)
	b = append(b, '\n')
	return append(b, body...)
}

func zipOf(t testing.TB, members map[string][]byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range sortedKeys(members) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[name])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sortedKeys(m map[string][]byte) []string {
	z := NPZ{}
	for k := range m {
		z[k] = nil
	}
	return z.Keys()
}

func TestHandBuiltVariants(t *testing.T) {
	be := []byte{0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0, 6}
	data := zipOf(t, map[string][]byte{
		// version 2 header, big-endian int32 in Fortran order: column-major [[1,3,5],[2,4,6]]
		"v2f.npy": npyBytes(2, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", be),
		// version 3, Python-2 style long dims, int8 negatives
		"v3.npy": npyBytes(3, `{"descr": "|i1", "fortran_order": False, "shape": (2L,)}`, []byte{0xff, 0x80}),
	})
	z, err := DecodeNPZ("hand.npz", data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(z["v2f"].Ints, []int64{1, 3, 5, 2, 4, 6}) {
		t.Errorf("v2f = %v, want [1 3 5 2 4 6]", z["v2f"].Ints)
	}
	if !reflect.DeepEqual(z["v3"].Ints, []int64{-1, -128}) {
		t.Errorf("v3 = %v", z["v3"].Ints)
	}
}

func TestRejects(t *testing.T) {
	ok := "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
	cases := []struct {
		name    string
		members map[string][]byte
		want    string
	}{
		{"size mismatch", map[string][]byte{"a.npy": npyBytes(1, ok, make([]byte, 7))}, "member a.npy: shape [2] of <i4 holds 8 bytes, the member has 7"},
		{"overflow", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil)}, "exceeds 1099511627776 bytes"},
		{"complex", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", make([]byte, 8))}, `dtype "<c8" is not supported`},
		{"object", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", make([]byte, 8))}, `dtype "|O" is not supported`},
		{"structured", map[string][]byte{"a.npy": npyBytes(1, "{'descr': [('x', '<i4')], 'fortran_order': False, 'shape': (1,), }", make([]byte, 4))}, "structured dtypes are not supported"},
		{"not npy", map[string][]byte{"a.txt": []byte("hi")}, "member a.txt: not a .npy member"},
		{"bad magic", map[string][]byte{"a.npy": []byte("hello world")}, "member a.npy: not a .npy array"},
		{"bad bool", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", []byte{2})}, "want 0 or 1"},
		{"u8 overflow", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", bytes.Repeat([]byte{0xff}, 8))}, "beyond int64"},
		{"no shape", map[string][]byte{"a.npy": npyBytes(1, "{'descr': '<i4', 'fortran_order': False}", nil)}, "no shape"},
	}
	for _, c := range cases {
		_, err := DecodeNPZ("x.npz", zipOf(t, c.members))
		if err == nil || !strings.HasPrefix(err.Error(), "x.npz: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want x.npz: ...%s", c.name, err, c.want)
		}
	}
	if _, err := DecodeNPZ("x.npz", []byte("not a zip")); err == nil || !strings.Contains(err.Error(), "x.npz: not an npz (zip) archive") {
		t.Errorf("not a zip: %v", err)
	}
}

func FuzzDecodeNPZ(f *testing.F) {
	for _, name := range []string{"dtypes.npz", "fortran_be.npz", "tile_small.npz", "layout_small.npz"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(zipOf(f, map[string][]byte{"a.npy": npyBytes(2, "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", make([]byte, 24))}))
	f.Fuzz(func(t *testing.T, data []byte) {
		z, err := DecodeNPZ("fuzz.npz", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.npz: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error not one line naming the file: %q", err)
			}
			return
		}
		for k, a := range z {
			n, err := elements(a.Shape, 1)
			if err != nil || n != a.Len() {
				t.Fatalf("%s: shape %v but %d values", k, a.Shape, a.Len())
			}
		}
	})
}

func TestReadNPZFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.npz")
	if err := os.WriteFile(bad, []byte("not a zip at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNPZFile(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": not an npz (zip) archive") {
		t.Errorf("not a zip: %v", err)
	}
	if _, err := ReadNPZFile(filepath.Join(dir, "missing.npz")); err == nil || !strings.Contains(err.Error(), "missing.npz") {
		t.Errorf("missing: %v", err)
	}
}

// BenchmarkReadTileNPZ reads and converts a tile-collection file of 64 nodes and 1000
// configs (deflated), the shape of a mid-sized TpuGraphs tile kernel.
func BenchmarkReadTileNPZ(b *testing.B) {
	const n, m, c = 64, 80, 1000
	z := NPZ{
		"node_feat":                  {Shape: []int{n, 140}, F32: make([]float32, n*140)},
		"node_opcode":                {Shape: []int{n}, Descr: "|u1", Ints: make([]int64, n)},
		"edge_index":                 {Shape: []int{m, 2}, Ints: make([]int64, 2*m)},
		"config_feat":                {Shape: []int{c, 24}, F32: make([]float32, c*24)},
		"config_runtime":             {Shape: []int{c}, Ints: make([]int64, c)},
		"config_runtime_normalizers": {Shape: []int{c}, Ints: make([]int64, c)},
	}
	for i := range z["node_feat"].F32 {
		z["node_feat"].F32[i] = float32(i % 17)
	}
	path := filepath.Join(b.TempDir(), "k.npz")
	if err := WriteNPZFile(path, z, true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := ReadNPZFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := RowFromNPZ(got, CollectionTile, FeatureSchema(CollectionTile)); err != nil {
			b.Fatal(err)
		}
	}
}

// writtenFixture is what testdata/written.npz holds: EncodeNPZ's output for these arrays
// (regenerate with TPUCOST_UPDATE_NPZ=1 go test ./dataset/tpugraphs -run TestWriterGolden;
// NumPy 1.24 loads it with the values below, checked once by hand with np.load).
func writtenFixture() NPZ {
	return NPZ{
		"node_feat":      {Shape: []int{2, 3}, F32: []float32{0.5, -1, 2, 3, 4.25, 1e-3}},
		"node_opcode":    {Shape: []int{2}, Descr: "|u1", Ints: []int64{24, 255}},
		"edge_index":     {Shape: []int{1, 2}, Descr: "<i8", Ints: []int64{1, 0}},
		"config_runtime": {Shape: []int{3}, Descr: "<i8", Ints: []int64{-5, 0, 1 << 40}},
		"runtime_f8":     {Shape: []int{3}, F64: []float64{0.1, 1e300, -2}},
		"i2":             {Shape: []int{2, 2}, Descr: "<i2", Ints: []int64{-32768, 1, 2, 32767}},
		"b1":             {Shape: []int{2}, Descr: "|b1", Ints: []int64{1, 0}},
	}
}

func TestWriterGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeNPZ(&buf, writtenFixture(), true); err != nil {
		t.Fatal(err)
	}
	const path = "testdata/written.npz"
	if os.Getenv("TPUCOST_UPDATE_NPZ") != "" {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("EncodeNPZ's output differs from %s (the writer changed: check it with NumPy, then regenerate)", path)
	}
	z, err := ReadNPZFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for k, a := range writtenFixture() {
		if !reflect.DeepEqual(z[k].Shape, a.Shape) || fmt.Sprint(values(z[k])) != fmt.Sprint(values(a)) {
			t.Errorf("%s: %v %v, want %v %v", k, z[k].Shape, values(z[k]), a.Shape, values(a))
		}
	}
}
