package stablehash

import (
	"encoding/binary"
	"hash/fnv"
	"testing"
)

// The encodings are frozen: these are the values the same inputs hashed to before the
// package existed (when each user wrote its own FNV-1a), so splits, noise, search streams
// and fingerprints stay what they were.
func TestFrozenValues(t *testing.T) {
	cases := []struct {
		name string
		got  uint64
		want uint64
	}{
		{"Str", New().Strs("abc", "", "de").Sum64(), lengthPrefixed("abc", "", "de")},
		{"Fields", New().Fields("k|8x128|db2/u1", '|').Sum64(), lengthPrefixed("k", "8x128", "db2/u1")},
		{"Fields/no separator", New().Fields("k", '|').Sum64(), lengthPrefixed("k")},
		{"Seeded+Label+Sum64Of", Seeded(7).Label("kernel").Sum64Of("abc"), seededLabel(7, "kernel", "abc")},
		{"Labels", New().Label("variant").Label("m").Sum64(), labels("variant", "m")},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
	// A value fixed forever (FNV-1a of the 8-byte length 3 and "abc", then the finalizer).
	if got, want := Mix(New().Str("abc").Sum64()), Mix(lengthPrefixed("abc")); got != want {
		t.Errorf("Mix: %#x, want %#x", got, want)
	}
	if got := Unit(^uint64(0)); got >= 1 || got < 0.999999 {
		t.Errorf("Unit(max) = %v, want just below 1", got)
	}
	if got := New().Str("x").Hex(); len(got) != 16 {
		t.Errorf("Hex gives %q, want 16 hex digits", got)
	}
}

func lengthPrefixed(parts ...string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write([]byte(p))
	}
	return h.Sum64()
}

func seededLabel(seed int64, label, s string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write([]byte(s))
	return h.Sum64()
}

func labels(ls ...string) uint64 {
	h := fnv.New64a()
	for _, l := range ls {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// Sum64Of on an empty hash is FNV-1a of the bytes alone (gnn.KernelID's values in
// checkpoints' seen-keys files), and Weyl is the simulator's frozen stream selector.
func TestFrozenSum64OfAndWeyl(t *testing.T) {
	f := fnv.New64a()
	f.Write([]byte("conv.7"))
	if got, want := New().Sum64Of("conv.7"), f.Sum64(); got != want {
		t.Errorf("Sum64Of: %#x, want %#x", got, want)
	}
	x := uint64(3)
	if got, want := Weyl(x), x*0x9e3779b97f4a7c15+1; got != want {
		t.Errorf("Weyl: %#x, want %#x", got, want)
	}
}
