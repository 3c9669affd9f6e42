package gym

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/internal/atomicfile"
)

// An agent checkpoint is a directory holding one file, AgentFile: JSON with the format,
// the agent's input schema (the encoder's degree cap, node and global feature names,
// actions), its parameters (names and shapes; their values as nn.Params.Bytes, base64) and training record, and the SHA-256 of all of it
// (computed with the sha256 field empty), like tune's policy checkpoints. It is written
// atomically (a crash leaves the previous or the new checkpoint); a checkpoint whose
// checksum fails is refused (ErrAgentCorrupt), and so is one of another format, schema
// or dimensions (ErrAgentMismatch).

// AgentFormat identifies the agent checkpoint format. Format 2 reads the graph through
// the shared GraphSAGE encoder (gnn/nn: per-block weights, a degree cap); a format-1
// checkpoint is refused with a message to retrain it.
const AgentFormat = "tpucost-gym-agent/2"

// agentFormatPrefix is what every agent checkpoint's format starts with.
const agentFormatPrefix = "tpucost-gym-agent/"

// AgentFile is the name of an agent checkpoint's file in its directory.
const AgentFile = "agent.json"

// ErrAgentMismatch is wrapped by errors loading a checkpoint of another format, schema
// or dimensions than this build's.
var ErrAgentMismatch = errors.New("agent checkpoint does not match this build")

// ErrAgentCorrupt is wrapped by errors loading a checkpoint whose checksum fails or whose
// content is damaged.
var ErrAgentCorrupt = errors.New("agent checkpoint is corrupt")

type paramRef struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

type agentFile struct {
	Format  string     `json:"format"`
	Hidden  int        `json:"hidden"`
	Schema  string     `json:"schema"`
	Params  []paramRef `json:"params"`
	Weights string     `json:"weights"` // base64 of little-endian float32, params in order
	Meta    AgentMeta  `json:"meta"`
	SHA256  string     `json:"sha256"`
}

func (f *agentFile) checksum() (string, error) {
	c := *f
	c.SHA256 = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}

// SaveAgent writes a to directory dir (created if needed) atomically.
func SaveAgent(dir string, a *Agent) error {
	f := agentFile{Format: AgentFormat, Hidden: agentHidden, Schema: agentSchema(), Meta: a.Meta}
	for _, p := range a.params {
		f.Params = append(f.Params, paramRef{Name: p.Name, Shape: slices.Clone(p.Shape)})
	}
	f.Weights = base64.StdEncoding.EncodeToString(a.params.Bytes())
	sum, err := f.checksum()
	if err != nil {
		return fmt.Errorf("saving agent %s: %w", dir, err)
	}
	f.SHA256 = sum
	b, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return fmt.Errorf("saving agent %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving agent: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, AgentFile), append(b, '\n')); err != nil {
		return fmt.Errorf("saving agent: %w", err)
	}
	return nil
}

// LoadAgent reads the agent checkpoint in directory dir (see SaveAgent for what it
// refuses).
func LoadAgent(dir string) (*Agent, error) {
	path := filepath.Join(dir, AgentFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading agent: %w", err)
	}
	// The format first, whatever the other fields: an older checkpoint has other ones.
	var hdr struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(b, &hdr); err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentCorrupt, err)
	}
	if hdr.Format != AgentFormat {
		if v, err := strconv.Atoi(strings.TrimPrefix(hdr.Format, agentFormatPrefix)); err == nil && strings.HasPrefix(hdr.Format, agentFormatPrefix) && v < 2 {
			return nil, fmt.Errorf("loading agent %s: %w: format %q is an older agent (format 1 aggregated the graph with its own layer; this build's agent reads it through the shared GraphSAGE encoder, %q): retrain it with `tpucost gym train`",
				path, ErrAgentMismatch, hdr.Format, AgentFormat)
		}
		return nil, fmt.Errorf("loading agent %s: %w: format %q, want %q", path, ErrAgentMismatch, hdr.Format, AgentFormat)
	}
	var f agentFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentCorrupt, err)
	}
	sum, err := f.checksum()
	if err != nil {
		return nil, fmt.Errorf("loading agent %s: %w", path, err)
	}
	if sum != f.SHA256 {
		return nil, fmt.Errorf("loading agent %s: %w: sha256 %s, recorded %s", path, ErrAgentCorrupt, sum, f.SHA256)
	}
	if f.Hidden != agentHidden {
		return nil, fmt.Errorf("loading agent %s: %w: hidden width %d, this build has %d", path, ErrAgentMismatch, f.Hidden, agentHidden)
	}
	if f.Schema != agentSchema() {
		return nil, fmt.Errorf("loading agent %s: %w: its input schema (node and global features, actions) differs from this build's", path, ErrAgentMismatch)
	}
	raw, err := base64.StdEncoding.DecodeString(f.Weights)
	if err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: weights: %w", path, ErrAgentCorrupt, err)
	}
	a := &Agent{params: agentParams(), Meta: f.Meta}
	if len(f.Params) != len(a.params) {
		return nil, fmt.Errorf("loading agent %s: %w: %d parameters, want %d", path, ErrAgentMismatch, len(f.Params), len(a.params))
	}
	for i, w := range a.params {
		if f.Params[i].Name != w.Name || !slices.Equal(f.Params[i].Shape, w.Shape) {
			return nil, fmt.Errorf("loading agent %s: %w: parameter %d is %s%v, want %s%v", path, ErrAgentMismatch, i, f.Params[i].Name, f.Params[i].Shape, w.Name, w.Shape)
		}
	}
	if err := a.params.SetBytes(raw); err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentCorrupt, err)
	}
	return a, nil
}
