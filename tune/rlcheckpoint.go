package tune

import (
	"errors"
	"fmt"

	"github.com/tpucost/tpucost/nn"
	"github.com/tpucost/tpucost/nn/rl"
	"github.com/tpucost/tpucost/nn/sealedckpt"
)

// A policy checkpoint is a directory holding one file, PolicyFile: JSON with the format,
// the policy's dimensions, its parameters (nn.Saved: names and shapes, their values in
// base64) and training record, sealed with the SHA-256 of all of it and written atomically
// (nn/rl's codec on nn/sealedckpt, shared with the gym's agent checkpoints: a crash
// leaves the previous or the new checkpoint); it records the action list the policy was
// trained on ("actions": layout, fusion), and a checkpoint whose checksum, format, action
// list or dimensions do not match this build is refused, as is a directory holding a
// gym agent (its action list is the passes).

// PolicyFormat identifies the policy checkpoint format. Format 2 added the layout head
// (layout and fusion decisions); format 3 reads the graph through the shared GraphSAGE
// encoder (nn: per-block weights, a degree cap). Older checkpoints are refused with a
// message to retrain them.
const PolicyFormat = policyFormatPrefix + "3"

// policyFormatPrefix is what every policy checkpoint's format starts with, and
// policyFormatVersion the version PolicyFormat ends with.
const (
	policyFormatPrefix  = "tpucost-rl-policy/"
	policyFormatVersion = 3
)

// PolicyFile is the name of a policy checkpoint's file in its directory.
const PolicyFile = rl.PolicyFile

// ErrPolicyMismatch is wrapped by errors loading a checkpoint of another format or other
// dimensions than this build's.
var ErrPolicyMismatch = errors.New("policy checkpoint does not match this build")

// ErrPolicyCorrupt is wrapped by errors loading a checkpoint whose checksum fails.
var ErrPolicyCorrupt = errors.New("policy checkpoint is corrupt")

type policyFile struct {
	Format string `json:"format"`
	// Checksum is the SHA-256 of the file with this value empty (internal/sealed).
	Checksum     string `json:"checksum"`
	NodeFeatures int    `json:"node_features"`
	EdgeFeatures int    `json:"edge_features"`
	OptFeatures  int    `json:"option_features"`
	Hidden       int    `json:"hidden"`
	Schema       string `json:"feature_schema"`
	// Actions is the action list the policy was trained on (its heads: layout, fusion);
	// absent in checkpoints of earlier builds of this format, which had the same heads.
	Actions []string `json:"actions,omitempty"`
	nn.Saved
	Meta PolicyMeta `json:"meta"`
}

// policyCheckpoint is the codec of policy checkpoints (nn/rl, shared with the gym's
// agent: it checks the action list, and refuses a gym agent's checkpoint, whose action
// list is another, with one line).
func policyCheckpoint() rl.Codec {
	return rl.Codec{Kind: sealedckpt.Kind{What: "policy", File: PolicyFile, Prefix: policyFormatPrefix, Version: policyFormatVersion,
		Older: func(v int) string {
			if v < 2 {
				return "format 1 decided fusion only; this build's policy decides layout and fusion"
			}
			return "format 2 aggregated the graph with its own layer; this build's policy reads it through the shared GraphSAGE encoder"
		},
		Retrain: "tpucost tune train-policy", Mismatch: ErrPolicyMismatch, Corrupt: ErrPolicyCorrupt},
		Actions: policyActions(), ListName: "decision list", Implicit: policyActions()}
}

// SavePolicy writes p to directory dir (created if needed) atomically.
func SavePolicy(dir string, p *Policy) error {
	return policyCheckpoint().Save(dir, &policyFile{Format: PolicyFormat, NodeFeatures: rlNodeFeatures, EdgeFeatures: rlEdgeFeatures, OptFeatures: rlOptionFeatures,
		Hidden: rlHidden, Schema: rlFeatureSchema(), Actions: policyActions(), Saved: nn.Save(p.params), Meta: p.Meta})
}

// LoadPolicy reads the policy checkpoint in directory dir. It refuses a checkpoint whose
// checksum fails (ErrPolicyCorrupt) or whose format, action list or dimensions differ
// from this build's (ErrPolicyMismatch; a gym agent's directory too).
func LoadPolicy(dir string) (*Policy, error) {
	var f policyFile
	ck := policyCheckpoint()
	path, err := ck.Load(dir, &f)
	if err != nil {
		return nil, err
	}
	if f.NodeFeatures != rlNodeFeatures || f.EdgeFeatures != rlEdgeFeatures || f.OptFeatures != rlOptionFeatures || f.Hidden != rlHidden {
		return nil, fmt.Errorf("loading policy %s: %w: node/edge/option features and hidden width %d/%d/%d/%d, this build has %d/%d/%d/%d",
			path, ErrPolicyMismatch, f.NodeFeatures, f.EdgeFeatures, f.OptFeatures, f.Hidden, rlNodeFeatures, rlEdgeFeatures, rlOptionFeatures, rlHidden)
	}
	if f.Schema != rlFeatureSchema() {
		return nil, fmt.Errorf("loading policy %s: %w: feature schema %q, this build has %q", path, ErrPolicyMismatch, f.Schema, rlFeatureSchema())
	}
	p := &Policy{params: policyParams(), Meta: f.Meta}
	if err := ck.Restore(path, f.Saved, p.params); err != nil {
		return nil, err
	}
	return p, nil
}

// clone returns a deep copy of p without optimizer state (fine-tuning a loaded policy
// must not change the caller's).
func (p *Policy) clone() *Policy {
	return &Policy{params: p.params.Clone(), Meta: p.Meta}
}
