package cli

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/zoo"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/demo"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/gym"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tpusim/replay"
	"github.com/tpucost/tpucost/tune"
)

// jsonOutputs is the type each command prints with --json (gym serve: its responses).
// A command missing here fails TestJSONKeyVocabulary: add the type it writes.
func jsonOutputs() map[string][]any {
	type tuneOut struct {
		*tune.Report
		ChipMismatch bool `json:"chip_mismatch"`
	}
	type tuneBatchOut struct {
		*tune.BatchReport
		ChipMismatch bool `json:"chip_mismatch"`
	}
	return map[string][]any{
		"zoo list":          {[]zoo.ListEntry{}},
		"compile":           {compiler.CompileResult{}},
		"sim":               {tpusim.Report{}, ragged.Report{}},
		"gen":               {gen.Result{}},
		"inspect":           {dataset.Summary{}},
		"train":             {gnn.TrainSummary{}},
		"predict":           {eval.ProgramReport{}, eval.RowReport{}},
		"eval":              {eval.Result{}},
		"tune":              {tuneOut{}, tuneBatchOut{}, tune.ShapesReport{}, tune.RaggedReport{}},
		"tune train-policy": {tune.PolicyMeta{}},
		"demo":              {demo.Result{}},
		"gym serve":         {gym.Response{}},
		"gym train":         {gym.AgentMeta{}},
		"gym eval":          {gym.EvalReport{}},
		"import tpugraphs":  {tpugraphs.ImportReport{}},
		"export tpugraphs":  {tpugraphs.ExportReport{}},
		"validate":          {replay.Report{}},
		"calibrate":         {CalibrateResult{}},
	}
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// vocabularyError says how key breaks the rule of the README's "What is guaranteed":
// snake_case; times in *_ns (or *_s for wall-clock), never seconds or other units, and
// rates *_per_s (so a unit is in the key's name, never in a field beside it, as
// time_unit was); percentages *_pct (APE and MAPE are percentages); slowdowns fractions
// everywhere.
func vocabularyError(key string) string {
	if !snakeCase.MatchString(key) {
		return "not snake_case"
	}
	segs := strings.Split(key, "_")
	has := func(words ...string) bool {
		for _, w := range words {
			if slices.Contains(segs, w) {
				return true
			}
		}
		return false
	}
	ns, s := strings.HasSuffix(key, "_ns"), strings.HasSuffix(key, "_s")
	switch {
	case has("sec", "secs", "second", "seconds", "ms", "msec", "us", "usec"):
		return "a time unit other than ns or s: times are *_ns, wall-clock *_s, rates *_per_s"
	case has("time", "times", "elapsed", "wall", "duration", "latency") && !ns && !s:
		return "a time without its unit: *_ns (or *_s for wall-clock)"
	case has("percent", "percentage"):
		return "percentages are *_pct"
	case has("ape", "mape") && !strings.HasSuffix(key, "_pct"):
		return "APE and MAPE are percentages: *_pct"
	case has("slowdown") && strings.HasSuffix(key, "_pct"):
		return "slowdowns are fractions everywhere (no _pct)"
	}
	return ""
}

// walkKeys calls f with the JSON path and key of every struct field reachable from t, as
// encoding/json writes it (embedded structs promoted; map keys are data, not names).
func walkKeys(t reflect.Type, path string, seen map[reflect.Type]bool, f func(path, key string)) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		fd := t.Field(i)
		tag := fd.Tag.Get("json")
		if tag == "-" || (!fd.IsExported() && !fd.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" && fd.Anonymous {
			walkKeys(fd.Type, path, seen, f)
			continue
		}
		if name == "" {
			name = fd.Name
		}
		f(path, name)
		walkKeys(fd.Type, path+"."+name, seen, f)
	}
}

// TestJSONKeyVocabulary walks every key every command can print with --json and checks it
// against the vocabulary rule (JSON once mixed seconds, elapsed_s, wall_s, stage_seconds,
// kernels_per_sec, samples_per_s, pick_time with time_unit, and train's slowdown@1_pct
// beside eval's fraction).
func TestJSONKeyVocabulary(t *testing.T) {
	outs := jsonOutputs()
	var leaves []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && !c.HasSubCommands() || c.Runnable() && c.Name() == "tune" {
			leaves = append(leaves, strings.TrimPrefix(c.CommandPath(), "tpucost "))
		}
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() {
				walk(s)
			}
		}
	}
	walk(NewRootCmd(IO{}))
	for _, name := range leaves {
		if _, ok := outs[name]; !ok {
			t.Errorf("command %q has no entry in jsonOutputs: add the type it prints with --json", name)
		}
	}
	for name, vs := range outs {
		for _, v := range vs {
			walkKeys(reflect.TypeOf(v), "", map[reflect.Type]bool{}, func(path, key string) {
				if why := vocabularyError(key); why != "" {
					t.Errorf("%s --json: key %s%s: %s", name, strings.TrimPrefix(path+".", "."), key, why)
				}
			})
		}
	}
	// Metric names are keys too (train's val.metrics, the checkpoint's metric).
	for _, m := range []string{gnn.MetricSlowdown, gnn.MetricAPE, gnn.MetricMAPE} {
		if why := vocabularyError(m); why != "" {
			t.Errorf("metric name %s: %s", m, why)
		}
	}
}
