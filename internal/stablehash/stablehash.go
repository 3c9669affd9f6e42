// Package stablehash is tpucost's one seeded, stable 64-bit hash: FNV-1a over an explicit
// byte encoding of the values written, so that a value hashes the same on every machine,
// in every process and in every version. Everything that must be reproducible from a
// seed uses it — dataset splits and the validation hold-out (which kernel lands in
// which part), measurement caches and program fingerprints (what a measurement is of),
// the simulator's measurement noise (seeded by what is measured), and the random streams
// of dataset generation and search.
//
// The encodings are part of the contract: changing one changes splits, noise and search
// paths, so they never change; new uses pick among them:
//
//   - Str writes a length-prefixed string (8-byte little-endian length, then the bytes):
//     unambiguous for any sequence of strings.
//   - Label writes a string and a 0 byte: for labels and domain names, which hold no 0.
//   - Uint64 writes 8 little-endian bytes (seeds and integers).
//   - Sum64Of(s) finishes with s's raw bytes (the last, free-form part).
//
// Mix is SplitMix64's finalizer, for uses that need well-spread low bits (FNV-1a's are
// weak), and Unit maps a hash to [0, 1).
package stablehash

import (
	"encoding/binary"
	"encoding/hex"
	"hash"
	"hash/fnv"
	"strings"
)

// Hash accumulates values; the zero value is not usable, call New or Seeded.
type Hash struct {
	h   hash.Hash64
	buf [8]byte
}

// New returns an empty hash.
func New() *Hash { return &Hash{h: fnv.New64a()} }

// Seeded returns a hash that starts with seed (Uint64).
func Seeded(seed int64) *Hash { return New().Uint64(uint64(seed)) }

// Str writes s length-prefixed.
func (h *Hash) Str(s string) *Hash {
	binary.LittleEndian.PutUint64(h.buf[:], uint64(len(s)))
	h.h.Write(h.buf[:])
	h.h.Write([]byte(s))
	return h
}

// Strs writes each string length-prefixed.
func (h *Hash) Strs(ss ...string) *Hash {
	for _, s := range ss {
		h.Str(s)
	}
	return h
}

// Label writes s followed by a 0 byte.
func (h *Hash) Label(s string) *Hash {
	h.h.Write([]byte(s))
	h.h.Write([]byte{0})
	return h
}

// Uint64 writes x as 8 little-endian bytes.
func (h *Hash) Uint64(x uint64) *Hash {
	binary.LittleEndian.PutUint64(h.buf[:], x)
	h.h.Write(h.buf[:])
	return h
}

// Fields writes every field of s split at sep, each length-prefixed: the hash of an
// identity string built by joining its parts with a separator they never contain is the
// hash of its parts.
func (h *Hash) Fields(s string, sep byte) *Hash {
	for {
		i := strings.IndexByte(s, sep)
		if i < 0 {
			return h.Str(s)
		}
		h.Str(s[:i])
		s = s[i+1:]
	}
}

// Sum64 returns the hash of what was written.
func (h *Hash) Sum64() uint64 { return h.h.Sum64() }

// Sum64Of writes s's raw bytes and returns the hash.
func (h *Hash) Sum64Of(s string) uint64 {
	h.h.Write([]byte(s))
	return h.h.Sum64()
}

// Hex returns the hash as 16 hexadecimal digits (big-endian, as hash.Hash.Sum gives).
func (h *Hash) Hex() string { return hex.EncodeToString(h.h.Sum(nil)) }

// Mix is SplitMix64's finalizer: a bijection that spreads every input bit over the
// output, for hashes whose low bits are used directly.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Unit maps a hash to [0, 1) with its top 53 bits.
func Unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// Weyl is x times the 64-bit golden ratio (2^64/φ, odd) plus 1: a stream selector spread
// from a small integer, as the simulator's noise streams derive theirs from a salt.
func Weyl(x uint64) uint64 { return x*0x9e3779b97f4a7c15 + 1 }
