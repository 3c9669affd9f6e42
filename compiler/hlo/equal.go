package hlo

import (
	"fmt"
	"slices"
)

// ModulesEqual returns nil if a and b are structurally identical, else an error that
// describes the first difference found. Identical means: the same name and header
// attributes; the same computations, matched by name and in the same order, with the
// same IsFusion, entry and root; and, in each computation, the same instructions in
// the same order with the same names, opcodes, shapes (including layouts), operands
// (by name), typed attributes, Extra attributes (in order), metadata and called
// computations (by name). Nil and empty lists are equal. Instruction IDs are ignored.
func ModulesEqual(a, b *Module) error {
	if a == nil || b == nil {
		if a == nil && b == nil {
			return nil
		}
		return fmt.Errorf("one module is nil")
	}
	if a.Name != b.Name {
		return fmt.Errorf("module name %q != %q", a.Name, b.Name)
	}
	if !slices.Equal(a.Attrs, b.Attrs) {
		return fmt.Errorf("module %s: header attributes %v != %v", a.Name, a.Attrs, b.Attrs)
	}
	if sa, sb := a.StackFrames, b.StackFrames; (sa == nil) != (sb == nil) || sa != nil &&
		(!slices.Equal(sa.FileNames, sb.FileNames) || !slices.Equal(sa.FunctionNames, sb.FunctionNames) ||
			!slices.Equal(sa.FileLocations, sb.FileLocations) || !slices.Equal(sa.StackFrames, sb.StackFrames)) {
		return fmt.Errorf("module %s: stack-frame tables differ", a.Name)
	}
	for _, ca := range a.Computations {
		if b.Computation(ca.Name) == nil {
			return fmt.Errorf("computation %q is only in the first module", ca.Name)
		}
	}
	for _, cb := range b.Computations {
		if a.Computation(cb.Name) == nil {
			return fmt.Errorf("computation %q is only in the second module", cb.Name)
		}
	}
	if len(a.Computations) != len(b.Computations) {
		return fmt.Errorf("module %s: %d computations != %d", a.Name, len(a.Computations), len(b.Computations))
	}
	for i, ca := range a.Computations {
		if cb := b.Computations[i]; ca.Name != cb.Name {
			return fmt.Errorf("computation %d is %q in the first module, %q in the second", i, ca.Name, cb.Name)
		}
	}
	if compName(a.Entry) != compName(b.Entry) {
		return fmt.Errorf("entry computation %q != %q", compName(a.Entry), compName(b.Entry))
	}
	for i, ca := range a.Computations {
		if err := computationsEqual(ca, b.Computations[i]); err != nil {
			return fmt.Errorf("computation %q: %w", ca.Name, err)
		}
	}
	return nil
}

func compName(c *Computation) string {
	if c == nil {
		return "<none>"
	}
	return c.Name
}

func instrName(in *Instruction) string {
	if in == nil {
		return "<none>"
	}
	return in.Name
}

func computationsEqual(a, b *Computation) error {
	if a.IsFusion != b.IsFusion {
		return fmt.Errorf("IsFusion %v != %v", a.IsFusion, b.IsFusion)
	}
	if !slices.Equal(a.Attrs, b.Attrs) {
		return fmt.Errorf("attributes %v != %v", a.Attrs, b.Attrs)
	}
	if len(a.Instructions) != len(b.Instructions) {
		return fmt.Errorf("%d instructions != %d", len(a.Instructions), len(b.Instructions))
	}
	for i, ia := range a.Instructions {
		ib := b.Instructions[i]
		if ia == nil || ib == nil {
			if ia != ib {
				return fmt.Errorf("instruction %d is nil in one module", i)
			}
			continue
		}
		if err := instructionsEqual(ia, ib); err != nil {
			return fmt.Errorf("instruction %d (%%%s): %w", i, ia.Name, err)
		}
	}
	if instrName(a.Root) != instrName(b.Root) {
		return fmt.Errorf("ROOT %%%s != %%%s", instrName(a.Root), instrName(b.Root))
	}
	return nil
}

func instructionsEqual(a, b *Instruction) error {
	diff := func(what string, x, y any) error { return fmt.Errorf("%s %v != %v", what, x, y) }
	switch {
	case a.Name != b.Name:
		return diff("name", a.Name, b.Name)
	case a.Opcode != b.Opcode:
		return diff("opcode", a.Opcode, b.Opcode)
	case !a.Shape.Equal(b.Shape):
		return diff("shape", a.Shape, b.Shape)
	case len(a.Operands) != len(b.Operands):
		return diff("operand count", len(a.Operands), len(b.Operands))
	}
	for i := range a.Operands {
		if x, y := instrName(a.Operands[i]), instrName(b.Operands[i]); x != y {
			return diff(fmt.Sprintf("operand %d", i), "%"+x, "%"+y)
		}
	}
	switch {
	case a.ParamNum != b.ParamNum:
		return diff("parameter number", a.ParamNum, b.ParamNum)
	case a.Literal != b.Literal:
		return diff("literal", a.Literal, b.Literal)
	case !slices.Equal(a.Dimensions, b.Dimensions) || a.HasDimensions != b.HasDimensions:
		return fmt.Errorf("dimensions %v (written %v) != %v (written %v)", a.Dimensions, a.HasDimensions, b.Dimensions, b.HasDimensions)
	case a.Index != b.Index:
		return diff("index", a.Index, b.Index)
	case !slices.Equal(a.Slice, b.Slice):
		return diff("slice", a.Slice, b.Slice)
	case !slices.Equal(a.Padding, b.Padding):
		return diff("padding", a.Padding, b.Padding)
	case !windowsEqual(a.Window, b.Window):
		return diff("window", a.Window, b.Window)
	case !convDimsEqual(a.Conv, b.Conv):
		return diff("dim_labels", a.Conv, b.Conv)
	case a.FeatureGroupCount != b.FeatureGroupCount:
		return diff("feature_group_count", a.FeatureGroupCount, b.FeatureGroupCount)
	case a.BatchGroupCount != b.BatchGroupCount:
		return diff("batch_group_count", a.BatchGroupCount, b.BatchGroupCount)
	case !dotDimsEqual(a.Dot, b.Dot):
		return diff("dot dimensions", a.Dot, b.Dot)
	case a.Direction != b.Direction:
		return diff("direction", a.Direction, b.Direction)
	case a.FusionKind != b.FusionKind:
		return diff("fusion kind", a.FusionKind, b.FusionKind)
	case compName(a.ToApply) != compName(b.ToApply):
		return diff("to_apply", compName(a.ToApply), compName(b.ToApply))
	case compName(a.Calls) != compName(b.Calls):
		return diff("calls", compName(a.Calls), compName(b.Calls))
	case compName(a.Condition) != compName(b.Condition):
		return diff("condition", compName(a.Condition), compName(b.Condition))
	case compName(a.Body) != compName(b.Body):
		return diff("body", compName(a.Body), compName(b.Body))
	case a.Metadata != b.Metadata:
		return diff("metadata", a.Metadata, b.Metadata)
	case !slices.Equal(a.Extra, b.Extra):
		return diff("attributes", a.Extra, b.Extra)
	case shardingText(a.Sharding) != shardingText(b.Sharding):
		return diff("sharding", shardingText(a.Sharding), shardingText(b.Sharding))
	}
	return nil
}

func windowsEqual(a, b *Window) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.Dims, b.Dims)
}

func convDimsEqual(a, b *ConvDims) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.InputBatch == b.InputBatch && a.InputFeature == b.InputFeature &&
		slices.Equal(a.InputSpatial, b.InputSpatial) &&
		a.KernelInput == b.KernelInput && a.KernelOutput == b.KernelOutput &&
		slices.Equal(a.KernelSpatial, b.KernelSpatial) &&
		a.OutputBatch == b.OutputBatch && a.OutputFeature == b.OutputFeature &&
		slices.Equal(a.OutputSpatial, b.OutputSpatial)
}

func dotDimsEqual(a, b *DotDims) bool {
	if a == nil || b == nil {
		return a == b
	}
	return slices.Equal(a.LhsBatch, b.LhsBatch) && slices.Equal(a.LhsContracting, b.LhsContracting) &&
		slices.Equal(a.RhsBatch, b.RhsBatch) && slices.Equal(a.RhsContracting, b.RhsContracting)
}

// shardingText is s as written ("" when absent), for comparing shardings.
func shardingText(s *Sharding) string {
	if s == nil {
		return ""
	}
	return s.String()
}
