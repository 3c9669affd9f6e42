package gnn

import (
	"fmt"
	"reflect"

	"github.com/tpucost/tpucost/nn"
)

// initFrom starts the trainer from the weights of the checkpoint in dir (TrainOptions.Init)
// instead of a fresh initialization: fine-tuning. The model keeps the checkpoint's
// architecture, loss, normalization statistics and target scaling (its weights are tied
// to them), so the checkpoint must be of the same task and read the same features as the
// data: another task, feature set or feature schema version is refused, as is an
// architecture (Model) or a loss given (given: the options as the caller gave them,
// before defaults) that differs from the checkpoint's. The optimizer starts afresh. An
// ensemble's first model is the start (of every member, when the fine-tuned model is an
// ensemble too).
func (t *trainer) initFrom(dir string, given TrainOptions) error {
	m, ck, err := Load(dir)
	if err != nil {
		return fmt.Errorf("train --init: %w", err)
	}
	switch {
	case ck.Task != t.opts.Task:
		return fmt.Errorf("train --init %s: a %s model, the data is %s", dir, ck.Task, t.opts.Task)
	case m.Config.FeatureSet != t.opts.Model.FeatureSet:
		return fmt.Errorf("train --init %s: the model reads feature set %s, the data has %s", dir, featureSetName(m.Config.FeatureSet), featureSetName(t.opts.Model.FeatureSet))
	case ck.FeatureSchemaVersion != t.opts.schema().Version:
		return fmt.Errorf("train --init %s: the model reads feature schema version %d, the data has %d", dir, ck.FeatureSchemaVersion, t.opts.schema().Version)
	case !reflect.DeepEqual(given.Model, Config{}) && !reflect.DeepEqual(withFeatureSet(given.Model, m.Config.FeatureSet), m.Config):
		return fmt.Errorf("train --init %s: the architecture given (%+v) is not the model's (%+v): leave the model flags unset", dir, given.Model, m.Config)
	case given.Loss != "" && given.Loss != m.Loss:
		return fmt.Errorf("train --init %s: the model was trained with loss %s, not %s", dir, m.Loss, given.Loss)
	}
	m.Members = nil // an ensemble (train --ensemble) starts every member from its first
	t.m = m
	t.opts.Model, t.opts.Loss = m.Config, m.Loss
	t.opts.Meta.InitFrom = dir
	t.best = m.Params.Clone()
	t.adam = nn.NewAdam(m.Params, t.opts.LR)
	t.progressf("starting from %s (%s, %s loss)", dir, ck.Task, m.Loss)
	return nil
}

// withFeatureSet is c reading feature set fs (the data decides it, not the flags).
func withFeatureSet(c Config, fs string) Config {
	c.FeatureSet = fs
	return c
}

func featureSetName(fs string) string {
	if fs == "" {
		return "tpucost's"
	}
	return fs
}
