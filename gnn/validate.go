package gnn

import (
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"

	"github.com/tpucost/tpucost/dataset"
)

// FieldError is an option outside its valid range. Field is the option's snake_case
// name (as in model.json: "epochs", "batch_kernels", "max_configs", "lr", "layers",
// "hidden", "test_fraction", "val_fraction", "shuffle_buffer", "max_segment_nodes",
// "node_config_width"), so that callers can name
// their own flag for it.
type FieldError struct {
	Field string
	Value string // as given
	Range string // the valid range, e.g. "an integer >= 1"
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %s is out of range: want %s", e.Field, e.Value, e.Range)
}

// Ranges of the options (beyond them training is meaningless or cannot run).
const (
	// maxLayers bounds Config.Layers: deeper GraphSAGE stacks oversmooth and the
	// zoo's kernels have a mean of 23 nodes.
	maxLayers = 32
	// maxHidden bounds Config.Hidden (and head widths): wider is far beyond what a
	// 2-core machine trains and what the paper uses (64).
	maxHidden = 4096
	// maxLR bounds the learning rate: Adam's steps are about lr in size, and
	// standardized outputs make steps above 1 diverge.
	maxLR = 1.0
	// maxNodeConfigWidth bounds Config.NodeConfigWidth (TpuGraphs' layout configs have
	// 18 features per node).
	maxNodeConfigWidth = 4096
	// maxPrior bounds Config.Prior: at 100 a 1% analytical difference is a hinge margin,
	// the network's output could no longer overrule the prior.
	maxPrior = 100
	// MinSegmentNodes and MaxSegmentNodes bound Config.MaxSegmentNodes when set (0 is
	// off): a segment of fewer nodes than a GraphSAGE layer's reach cuts most of the
	// graph's edges, and a segment of more than 2^20 nodes bounds nothing on this machine.
	MinSegmentNodes = 8
	MaxSegmentNodes = 1 << 20
)

func intField(field string, v, lo, hi int) error {
	if v < lo || v > hi {
		r := fmt.Sprintf("an integer >= %d", lo)
		if hi != math.MaxInt {
			r = fmt.Sprintf("an integer in [%d, %d]", lo, hi)
		}
		return &FieldError{Field: field, Value: fmt.Sprint(v), Range: r}
	}
	return nil
}

// openUnit checks that v is in the open interval (0, 1).
func openUnit(field string, v float64) error {
	if !(v > 0 && v < 1) {
		return &FieldError{Field: field, Value: fmt.Sprint(v), Range: "a number in (0, 1)"}
	}
	return nil
}

// Validate checks the options as training uses them: it fills zero fields with their
// defaults, then calls Validate. A caller that must not substitute defaults (the CLI,
// where a zero came from the user) calls Validate on the options as given: then zero
// Epochs, BatchKernels, MaxConfigs or LR are errors. Errors are FieldErrors (joined).
func (o TrainOptions) Validate() error {
	var errs []error
	errs = append(errs, intField("epochs", o.Epochs, 0, math.MaxInt), intField("steps", o.Steps, 0, math.MaxInt))
	if o.Epochs > 0 && o.Steps > 0 {
		errs = append(errs, &FieldError{Field: "steps", Value: fmt.Sprint(o.Steps), Range: "0 when epochs is given (one budget or the other)"})
	}
	if o.Schedule != "" {
		if _, err := ParseSchedule(string(o.Schedule)); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, intField("batch_kernels", o.BatchKernels, 1, math.MaxInt))
	minConfigs := 1
	if o.Loss.Rank() {
		minConfigs = 2 // a rank loss compares configurations of one kernel
	}
	errs = append(errs, intField("max_configs", o.MaxConfigs, minConfigs, math.MaxInt))
	if !(o.LR > 0 && o.LR <= maxLR) {
		errs = append(errs, &FieldError{Field: "lr", Value: fmt.Sprint(o.LR), Range: fmt.Sprintf("a number in (0, %g]", maxLR)})
	}
	errs = append(errs, intField("shuffle_buffer", o.ShuffleBuffer, 0, math.MaxInt))
	if o.MaxSegmentNodes != 0 {
		errs = append(errs, intField("max_segment_nodes", o.MaxSegmentNodes, MinSegmentNodes, MaxSegmentNodes))
	}
	if !reflect.DeepEqual(o.Model, Config{}) {
		errs = append(errs, o.Model.Validate())
	}
	if o.Resume && o.OutDir == "" {
		errs = append(errs, errors.New("resuming needs the checkpoint directory (OutDir)"))
	}
	return errors.Join(errs...)
}

// Validate checks the data options as OpenData uses them (after defaults: a zero
// fraction given to OpenData means the default, given to Validate it is an error).
func (o DataOptions) Validate() error {
	var errs []error
	if err := dataset.CheckSplitKind(o.Split); err != nil {
		errs = append(errs, &FieldError{Field: "split", Value: fmt.Sprintf("%q", o.Split), Range: dataset.SplitUsage})
	}
	errs = append(errs, openUnit("test_fraction", o.TestFraction), openUnit("val_fraction", o.ValFraction))
	return errors.Join(errs...)
}

// checkWritable fails unless files can be created in dir (made if missing).
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("output directory %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// diffStruct returns the first field (by its json name) whose values differ between a
// and b, structs of one type, with both values printed.
func diffStruct(a, b any) (field, av, bv string) {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := 0; i < va.NumField(); i++ {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		if !reflect.DeepEqual(fa, fb) {
			name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("json"), ",")
			return name, fmt.Sprint(fa), fmt.Sprint(fb)
		}
	}
	return "", "", ""
}

// mismatchError is a resume refused because an option differs from the checkpoint's.
func mismatchError(dir, field, given, ckpt string) error {
	return fmt.Errorf("train: cannot resume %s: %s is %s, the checkpoint's is %s (resume with the checkpoint's value, or train into a new directory)",
		dir, field, given, ckpt)
}
