package tune

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// A policy checkpoint is a directory holding one file, PolicyFile: JSON with the format,
// the policy's dimensions, its parameters (little-endian float32, base64) and training
// record, and the SHA-256 of all of it (computed with the sha256 field empty). It is
// written atomically (a crash leaves the previous or the new checkpoint), and a
// checkpoint whose checksum, format or dimensions do not match this build is refused.

// PolicyFormat identifies the policy checkpoint format. Format 2 added the layout head
// (layout and fusion decisions); a format-1 checkpoint (fusion only) is refused.
const PolicyFormat = "tpucost-rl-policy/2"

// policyFormatPrefix is what every policy checkpoint's format starts with.
const policyFormatPrefix = "tpucost-rl-policy/"

// PolicyFile is the name of a policy checkpoint's file in its directory.
const PolicyFile = "policy.json"

// ErrPolicyMismatch is wrapped by errors loading a checkpoint of another format or other
// dimensions than this build's.
var ErrPolicyMismatch = errors.New("policy checkpoint does not match this build")

// ErrPolicyCorrupt is wrapped by errors loading a checkpoint whose checksum fails.
var ErrPolicyCorrupt = errors.New("policy checkpoint is corrupt")

type policyParamRef struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

type policyFile struct {
	Format       string           `json:"format"`
	NodeFeatures int              `json:"node_features"`
	EdgeFeatures int              `json:"edge_features"`
	OptFeatures  int              `json:"option_features"`
	Hidden       int              `json:"hidden"`
	Schema       string           `json:"feature_schema"`
	Params       []policyParamRef `json:"params"`
	Weights      string           `json:"weights"` // base64 of little-endian float32, params in order
	Meta         PolicyMeta       `json:"meta"`
	SHA256       string           `json:"sha256"`
}

func (f *policyFile) checksum() (string, error) {
	c := *f
	c.SHA256 = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// SavePolicy writes p to directory dir (created if needed) atomically.
func SavePolicy(dir string, p *Policy) error {
	f := policyFile{Format: PolicyFormat, NodeFeatures: rlNodeFeatures, EdgeFeatures: rlEdgeFeatures, OptFeatures: rlOptionFeatures,
		Hidden: rlHidden, Schema: rlFeatureSchema(), Meta: p.Meta}
	var w bytes.Buffer
	for _, pp := range p.params {
		f.Params = append(f.Params, policyParamRef{Name: pp.name, Shape: slices.Clone(pp.shape)})
		for _, v := range pp.data {
			_ = binary.Write(&w, binary.LittleEndian, math.Float32bits(v))
		}
	}
	f.Weights = base64.StdEncoding.EncodeToString(w.Bytes())
	sum, err := f.checksum()
	if err != nil {
		return fmt.Errorf("saving policy %s: %w", dir, err)
	}
	f.SHA256 = sum
	b, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return fmt.Errorf("saving policy %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving policy: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, PolicyFile), append(b, '\n')); err != nil {
		return fmt.Errorf("saving policy: %w", err)
	}
	return nil
}

// LoadPolicy reads the policy checkpoint in directory dir. It refuses a checkpoint whose
// checksum fails (ErrPolicyCorrupt) or whose format or dimensions differ from this
// build's (ErrPolicyMismatch).
func LoadPolicy(dir string) (*Policy, error) {
	path := filepath.Join(dir, PolicyFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading policy: %w", err)
	}
	// The format first, whatever the other fields: an older checkpoint has other ones.
	var hdr struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(b, &hdr); err != nil {
		return nil, fmt.Errorf("loading policy %s: %w: %w", path, ErrPolicyCorrupt, err)
	}
	if hdr.Format != PolicyFormat {
		if v, err := strconv.Atoi(strings.TrimPrefix(hdr.Format, policyFormatPrefix)); err == nil && strings.HasPrefix(hdr.Format, policyFormatPrefix) && v < 2 {
			return nil, fmt.Errorf("loading policy %s: %w: format %q is an older policy (format 1 decided fusion only; this build's policy decides layout and fusion, %q): retrain it with `tpucost tune train-policy`",
				path, ErrPolicyMismatch, hdr.Format, PolicyFormat)
		}
		return nil, fmt.Errorf("loading policy %s: %w: format %q, want %q", path, ErrPolicyMismatch, hdr.Format, PolicyFormat)
	}
	var f policyFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("loading policy %s: %w: %w", path, ErrPolicyCorrupt, err)
	}
	sum, err := f.checksum()
	if err != nil {
		return nil, fmt.Errorf("loading policy %s: %w", path, err)
	}
	if sum != f.SHA256 {
		return nil, fmt.Errorf("loading policy %s: %w: sha256 %s, recorded %s", path, ErrPolicyCorrupt, sum, f.SHA256)
	}
	if f.NodeFeatures != rlNodeFeatures || f.EdgeFeatures != rlEdgeFeatures || f.OptFeatures != rlOptionFeatures || f.Hidden != rlHidden {
		return nil, fmt.Errorf("loading policy %s: %w: node/edge/option features and hidden width %d/%d/%d/%d, this build has %d/%d/%d/%d",
			path, ErrPolicyMismatch, f.NodeFeatures, f.EdgeFeatures, f.OptFeatures, f.Hidden, rlNodeFeatures, rlEdgeFeatures, rlOptionFeatures, rlHidden)
	}
	if f.Schema != rlFeatureSchema() {
		return nil, fmt.Errorf("loading policy %s: %w: feature schema %q, this build has %q", path, ErrPolicyMismatch, f.Schema, rlFeatureSchema())
	}
	raw, err := base64.StdEncoding.DecodeString(f.Weights)
	if err != nil {
		return nil, fmt.Errorf("loading policy %s: %w: weights: %w", path, ErrPolicyCorrupt, err)
	}
	want := paramShapes()
	if len(f.Params) != len(want) {
		return nil, fmt.Errorf("loading policy %s: %w: %d parameters, want %d", path, ErrPolicyMismatch, len(f.Params), len(want))
	}
	p := &Policy{Meta: f.Meta}
	off := 0
	for i, w := range want {
		if f.Params[i].Name != w.name || !slices.Equal(f.Params[i].Shape, w.shape) {
			return nil, fmt.Errorf("loading policy %s: %w: parameter %d is %s%v, want %s%v", path, ErrPolicyMismatch, i, f.Params[i].Name, f.Params[i].Shape, w.name, w.shape)
		}
		n := w.shape[0] * w.shape[1]
		if off+4*n > len(raw) {
			return nil, fmt.Errorf("loading policy %s: %w: weights end at parameter %s", path, ErrPolicyCorrupt, w.name)
		}
		pp := &policyParam{name: w.name, shape: w.shape, data: make([]float32, n)}
		for j := range n {
			pp.data[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[off+4*j:]))
			if v := float64(pp.data[j]); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("loading policy %s: %w: parameter %s has a non-finite value", path, ErrPolicyCorrupt, w.name)
			}
		}
		off += 4 * n
		p.params = append(p.params, pp)
	}
	if off != len(raw) {
		return nil, fmt.Errorf("loading policy %s: %w: %d bytes of weights, want %d", path, ErrPolicyCorrupt, len(raw), off)
	}
	return p, nil
}

// clone returns a deep copy of p without optimizer state (fine-tuning a loaded policy
// must not change the caller's).
func (p *Policy) clone() *Policy {
	c := &Policy{Meta: p.Meta}
	for _, pp := range p.params {
		c.params = append(c.params, &policyParam{name: pp.name, shape: pp.shape, data: slices.Clone(pp.data)})
	}
	return c
}
