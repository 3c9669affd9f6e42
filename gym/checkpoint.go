package gym

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tpucost/tpucost/gnn/nn"
	"github.com/tpucost/tpucost/internal/atomicfile"
	"github.com/tpucost/tpucost/internal/jsonerr"
	"github.com/tpucost/tpucost/internal/sealed"
)

// An agent checkpoint is a directory holding one file, AgentFile: JSON with the format,
// the agent's input schema (the encoder's degree cap, node and global feature names,
// actions), its parameters (nn.Saved: names and shapes, their values in base64) and
// training record, sealed with the SHA-256 of all of it (internal/sealed), like tune's
// policy checkpoints. It is written
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

type agentFile struct {
	Format string `json:"format"`
	// Checksum is the SHA-256 of the file with this value empty (internal/sealed).
	Checksum string `json:"checksum"`
	Hidden   int    `json:"hidden"`
	Schema   string `json:"schema"`
	nn.Saved
	Meta AgentMeta `json:"meta"`
}

// SaveAgent writes a to directory dir (created if needed) atomically.
func SaveAgent(dir string, a *Agent) error {
	f := agentFile{Format: AgentFormat, Hidden: agentHidden, Schema: agentSchema(), Saved: nn.Save(a.params), Meta: a.Meta}
	b, err := sealed.Marshal(&f)
	if err != nil {
		return fmt.Errorf("saving agent %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("saving agent: %w", err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, AgentFile), b); err != nil {
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
	if err := jsonerr.Unmarshal(path, b, &hdr); err != nil {
		return nil, fmt.Errorf("loading agent: %w: %w", ErrAgentCorrupt, err)
	}
	if hdr.Format != AgentFormat {
		if v, err := strconv.Atoi(strings.TrimPrefix(hdr.Format, agentFormatPrefix)); err == nil && strings.HasPrefix(hdr.Format, agentFormatPrefix) && v < 2 {
			return nil, fmt.Errorf("loading agent %s: %w: format %q is an older agent (format 1 aggregated the graph with its own layer; this build's agent reads it through the shared GraphSAGE encoder, %q): retrain it with `tpucost gym train`",
				path, ErrAgentMismatch, hdr.Format, AgentFormat)
		}
		return nil, fmt.Errorf("loading agent %s: %w: format %q, want %q", path, ErrAgentMismatch, hdr.Format, AgentFormat)
	}
	if err := sealed.Verify(b); err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentCorrupt, err)
	}
	var f agentFile
	if err := jsonerr.UnmarshalStrict(path, b, &f); err != nil {
		return nil, fmt.Errorf("loading agent: %w: %w", ErrAgentCorrupt, err)
	}
	if f.Hidden != agentHidden {
		return nil, fmt.Errorf("loading agent %s: %w: hidden width %d, this build has %d", path, ErrAgentMismatch, f.Hidden, agentHidden)
	}
	if f.Schema != agentSchema() {
		return nil, fmt.Errorf("loading agent %s: %w: its input schema (node and global features, actions) differs from this build's", path, ErrAgentMismatch)
	}
	a := &Agent{params: agentParams(), Meta: f.Meta}
	if err := f.Restore(a.params); errors.Is(err, nn.ErrLayout) {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentMismatch, err)
	} else if err != nil {
		return nil, fmt.Errorf("loading agent %s: %w: %w", path, ErrAgentCorrupt, err)
	}
	return a, nil
}
