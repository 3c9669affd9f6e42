package hlo

import (
	"errors"
	"fmt"
)

// Verify checks that m is well formed: every computation has exactly one root among its
// instructions; every operand is defined earlier in the same computation; instruction
// names are unique within their computation (the same name in two computations is legal); parameter numbers are 0..n-1; every called computation belongs to m; layouts are
// permutations of their shape's dimensions; and every instruction's shape agrees with the
// shape rules of its op (InferShape). It returns all problems found, joined.
func Verify(m *Module) error {
	var errs []error
	if m.Entry == nil {
		return errors.New("module has no ENTRY computation")
	}
	comps := make(map[*Computation]bool, len(m.Computations))
	for _, c := range m.Computations {
		comps[c] = true
	}
	if !comps[m.Entry] {
		errs = append(errs, fmt.Errorf("entry computation %s is not in the module", m.Entry.Name))
	}
	for _, c := range m.Computations {
		errs = append(errs, verifyComputation(c, comps)...)
		if len(errs) > 20 {
			errs = append(errs[:20], errors.New("too many errors"))
			break
		}
	}
	if len(errs) == 0 {
		if err := verifyRagged(m); err != nil { // ragged.go
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func verifyComputation(c *Computation, comps map[*Computation]bool) []error {
	names := make(map[string]bool, len(c.Instructions))
	var errs []error
	fail := func(in *Instruction, format string, args ...any) {
		errs = append(errs, At(in, fmt.Errorf("%s: %%%s: %s", c.Name, in.Name, fmt.Sprintf(format, args...))))
	}
	defined := make(map[*Instruction]bool, len(c.Instructions))
	rootSeen := false
	var params []bool
	for _, in := range c.Instructions {
		if names[in.Name] {
			fail(in, "name defined twice")
		}
		names[in.Name] = true
		operandsOK := true
		for i, op := range in.Operands {
			if op == nil || !defined[op] {
				operandsOK = false
				name := "<nil>"
				if op != nil {
					name = op.Name
				}
				fail(in, "operand %d (%%%s) is not defined before use in this computation", i, name)
			}
		}
		for _, cc := range in.CalledComputations() {
			if !comps[cc] {
				fail(in, "calls %s, which is not in the module", cc.Name)
			}
		}
		if in.Opcode == OpParameter {
			if in.ParamNum < 0 || in.ParamNum > len(c.Instructions) {
				fail(in, "parameter number %d out of range", in.ParamNum)
			} else {
				for len(params) <= in.ParamNum {
					params = append(params, false)
				}
				if params[in.ParamNum] {
					fail(in, "parameter number %d used twice", in.ParamNum)
				}
				params[in.ParamNum] = true
			}
		}
		if err := verifyLayouts(in.Shape); err != nil {
			fail(in, "%v", err)
		}
		if operandsOK {
			if want, err := InferShape(in); err != nil {
				fail(in, "%v", err)
			} else if !want.CompatibleMixedPrecision(in.Shape) {
				fail(in, "shape %s does not match the %s shape rule, which gives %s", in.Shape.StringNoLayout(), in.Opcode, want.StringNoLayout())
			}
		}
		defined[in] = true
		if in == c.Root {
			rootSeen = true
		}
	}
	for i, ok := range params {
		if !ok {
			errs = append(errs, fmt.Errorf("%s: parameter %d is missing", c.Name, i))
		}
	}
	if c.Root == nil || !rootSeen {
		errs = append(errs, fmt.Errorf("%s: computation has no ROOT among its instructions", c.Name))
	}
	return errs
}

func verifyLayouts(s Shape) error {
	if s.IsTuple() {
		for _, e := range s.Tuple {
			if err := verifyLayouts(e); err != nil {
				return err
			}
		}
		return nil
	}
	if s.Layout == nil {
		return nil
	}
	if err := checkPermutation(s.Layout.MinorToMajor, s.Rank()); err != nil {
		return fmt.Errorf("layout %s of %s: %w", s.Layout, s.StringNoLayout(), err)
	}
	return nil
}

// CheckBounded reports an error naming the first instruction, in the entry computation
// or any computation it reaches, whose shape has an unbounded dynamic dimension
// ("f32[?]"): such a program has no size to compile or simulate. Unreachable
// computations may keep them.
func CheckBounded(m *Module) error {
	seen := map[*Computation]bool{}
	var walk func(c *Computation) error
	walk = func(c *Computation) error {
		if c == nil || seen[c] {
			return nil
		}
		seen[c] = true
		for _, in := range c.Instructions {
			if hasUnbounded(in.Shape) {
				return At(in, fmt.Errorf("computation %s: %%%s has an unbounded dynamic dimension (%s): give it a bound (<=N) to compile or simulate it",
					c.Name, in.Name, in.Shape.StringNoLayout()))
			}
			for _, cc := range in.CalledComputations() {
				if err := walk(cc); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(m.Entry)
}

func hasUnbounded(s Shape) bool {
	for _, d := range s.Dims {
		if d == UnboundedDim {
			return true
		}
	}
	for _, e := range s.Tuple {
		if hasUnbounded(e) {
			return true
		}
	}
	return false
}
