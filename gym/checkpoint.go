package gym

import (
	"errors"
	"fmt"

	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/rl"
	"github.com/tpucost/tpucost/nn/sealedckpt"
)

// An agent checkpoint is a directory holding one file, AgentFile: JSON with the format,
// the agent's input schema (the encoder's degree cap, node and global feature names,
// actions), its parameters (nn.Saved: names and shapes, their values in base64) and
// training record, sealed with the SHA-256 of all of it and written atomically
// (nn/rl's codec on nn/sealedckpt, shared with tune's policy checkpoints: a crash leaves
// the previous or the new checkpoint); a checkpoint whose
// checksum fails is refused (ErrAgentCorrupt), and so is one of another format, action
// list, schema or dimensions (ErrAgentMismatch), and a directory holding a tune policy
// (its action list is another).

// AgentFormat identifies the agent checkpoint format. Format 2 reads the graph through
// the shared GraphSAGE encoder (nn: per-block weights, a degree cap); a format-1
// checkpoint is refused with a message to retrain it.
const AgentFormat = agentFormatPrefix + "2"

// agentFormatPrefix is what every agent checkpoint's format starts with, and
// agentFormatVersion the version AgentFormat ends with.
const (
	agentFormatPrefix  = "tpucost-gym-agent/"
	agentFormatVersion = 2
)

// AgentFile is the name of an agent checkpoint's file in its directory.
const AgentFile = rl.AgentFile

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
	// Actions is the action list the agent was trained on (the passes of opt.All() and
	// stop, by index): an agent is only valid against the same list.
	Actions []string `json:"actions"`
	nn.Saved
	Meta AgentMeta `json:"meta"`
}

// agentCheckpoint is the codec of agent checkpoints (nn/rl, shared with tune's policy:
// it checks the action list, and refuses a tune policy's checkpoint, whose action list
// is another, with one line).
func agentCheckpoint() rl.Codec {
	return rl.Codec{Kind: sealedckpt.Kind{What: "agent", File: AgentFile, Prefix: agentFormatPrefix, Version: agentFormatVersion,
		Older: func(int) string {
			return "format 1 aggregated the graph with its own layer; this build's agent reads it through the shared GraphSAGE encoder"
		},
		Retrain: "tpucost gym train", Mismatch: ErrAgentMismatch, Corrupt: ErrAgentCorrupt},
		Actions: Actions(), ListName: "pass list"}
}

// SaveAgent writes a to directory dir (created if needed) atomically.
func SaveAgent(dir string, a *Agent) error {
	return agentCheckpoint().Save(dir, &agentFile{Format: AgentFormat, Hidden: agentHidden, Schema: agentSchema(), Actions: Actions(), Saved: nn.Save(a.params), Meta: a.Meta})
}

// LoadAgent reads the agent checkpoint in directory dir (see SaveAgent for what it
// refuses).
func LoadAgent(dir string) (*Agent, error) {
	var f agentFile
	ck := agentCheckpoint()
	path, err := ck.Load(dir, &f)
	if err != nil {
		return nil, err
	}
	if f.Hidden != agentHidden {
		return nil, fmt.Errorf("loading agent %s: %w: hidden width %d, this build has %d", path, ErrAgentMismatch, f.Hidden, agentHidden)
	}
	if f.Schema != agentSchema() {
		return nil, fmt.Errorf("loading agent %s: %w: its input schema (node and global features, actions) differs from this build's", path, ErrAgentMismatch)
	}
	a := &Agent{params: agentParams(), Meta: f.Meta}
	if err := ck.Restore(path, f.Saved, a.params); err != nil {
		return nil, err
	}
	return a, nil
}
