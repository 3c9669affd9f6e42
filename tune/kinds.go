package tune

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tpucost/tpucost/compiler"
)

// ParseKinds parses a comma-separated list of config kinds (compiler.Kinds; any case,
// duplicates dropped, empty items skipped). Errors name the command line's --kinds.
func ParseKinds(list string) ([]compiler.Kind, error) {
	var kinds []compiler.Kind
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k := compiler.Kind(strings.ToLower(s))
		if !slices.Contains(compiler.Kinds(), k) {
			return nil, fmt.Errorf("--kinds %q: want one or more of %s", s, KindNames(compiler.Kinds()))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

// CheckRLKinds accepts kinds the rl policy decides (RLKinds: layout, fusion).
func CheckRLKinds(kinds []compiler.Kind) error {
	for _, k := range kinds {
		if !slices.Contains(RLKinds(), k) {
			rl := RLKinds()
			return fmt.Errorf("--kinds %s: strategy %s decides %s (use --kinds %s, %s)", KindList(kinds), RL, joinAnd(rl), KindList(rl), joinOr(rl))
		}
	}
	return nil
}

// KindNames writes kinds as a list in help and messages: "layout, fusion, tile".
func KindNames(kinds []compiler.Kind) string {
	ss := make([]string, len(kinds))
	for i, k := range kinds {
		ss[i] = string(k)
	}
	return strings.Join(ss, ", ")
}

// RLKindChoices writes the --kinds values of the rl strategy and of train-policy for help
// and messages: "layout, fusion or both" (RLKinds).
func RLKindChoices() string {
	rl := RLKinds()
	if len(rl) == 2 {
		return KindNames(rl) + " or both"
	}
	return KindNames(rl) + " or several"
}

// joinAnd writes kinds as "layout and fusion" ("a, b and c").
func joinAnd(kinds []compiler.Kind) string { return joinLast(kinds, " and ") }

// joinOr writes kinds as "layout or fusion" ("a, b or c").
func joinOr(kinds []compiler.Kind) string { return joinLast(kinds, " or ") }

func joinLast(kinds []compiler.Kind, last string) string {
	if len(kinds) < 2 {
		return KindNames(kinds)
	}
	return KindNames(kinds[:len(kinds)-1]) + last + string(kinds[len(kinds)-1])
}

// KindList joins kinds with commas.
func KindList(kinds []compiler.Kind) string {
	var ss []string
	for _, k := range kinds {
		ss = append(ss, string(k))
	}
	return strings.Join(ss, ",")
}

// SearchKinds resolves the config kinds a run of strategy st searches and, for rl, its
// policy, from the kinds asked for (ParseKinds; none: the default) and the policy
// directory: kinds default to all, or to layout,fusion for rl; rl requires a policy, and
// a policy is an error with any other strategy. With rl, the kinds must be ones the
// policy trained on. Errors name the command line's --kinds, --policy and --strategy.
func SearchKinds(st Strategy, kinds []compiler.Kind, policyDir string) ([]compiler.Kind, *Policy, error) {
	if st == XTAT && len(kinds) > 0 {
		return nil, nil, errors.New("--kinds is for the non-xtat strategies (xtat's schedule tunes every pass)")
	}
	if st != RL {
		if policyDir != "" {
			return nil, nil, fmt.Errorf("--policy is for --strategy rl, not %s", st)
		}
		return kinds, nil, nil
	}
	if policyDir == "" {
		return nil, nil, fmt.Errorf("--strategy rl: %w", ErrNoPolicy)
	}
	if len(kinds) == 0 {
		kinds = RLKinds()
	}
	if err := CheckRLKinds(kinds); err != nil {
		return nil, nil, err
	}
	p, err := LoadPolicy(policyDir)
	if err != nil {
		return nil, nil, fmt.Errorf("--policy: %w", err)
	}
	for _, k := range kinds {
		if !slices.Contains(p.Meta.Kinds, k) {
			return nil, nil, fmt.Errorf("--kinds %s: the policy %s trained on %s decisions only", KindList(kinds), policyDir, KindList(p.Meta.Kinds))
		}
	}
	return kinds, p, nil
}
