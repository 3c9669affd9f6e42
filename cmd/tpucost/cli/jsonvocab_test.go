package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/tpucost/tpucost/bitserial"
	"github.com/tpucost/tpucost/bitserial/lutcpu"
	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/dataset"
	"github.com/tpucost/tpucost/dataset/gen"
	"github.com/tpucost/tpucost/dataset/tpugraphs"
	"github.com/tpucost/tpucost/demo"
	"github.com/tpucost/tpucost/gnn"
	"github.com/tpucost/tpucost/gnn/eval"
	"github.com/tpucost/tpucost/gym"
	"github.com/tpucost/tpucost/internal/buildinfo"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/tpusim/ragged"
	"github.com/tpucost/tpucost/tune"
	"github.com/tpucost/tpucost/validate"
	"github.com/tpucost/tpucost/zoo"
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
		"gen":               {gen.Result{}, lutcpu.GenReport{}},
		"inspect":           {dataset.Summary{}, dataset.MeasuredSummary{}},
		"train":             {gnn.TrainSummary{}, lutcpu.TrainReport{}},
		"predict":           {eval.ProgramReport{}, eval.RowReport{}},
		"eval":              {eval.Result{}, lutcpu.EvalReport{}},
		"tune":              {tuneOut{}, tuneBatchOut{}, tune.ShapesReport{}, tune.RaggedReport{}, lutcpu.TuneReport{}, tune.MicroReport{}},
		"tune train-policy": {tune.PolicyMeta{}},
		"demo":              {demo.Result{}},
		"gym serve":         {gym.Response{}},
		"gym train":         {gym.AgentMeta{}},
		"gym eval":          {gym.EvalReport{}},
		"import tpugraphs":  {tpugraphs.ImportReport{}},
		"export tpugraphs":  {tpugraphs.ExportReport{}},
		"validate":          {validate.Report{}},
		"calibrate":         {CalibrateResult{}},
		"bitserial":         {bitserial.Report{}},
		"--version":         {buildinfo.Info{}},
	}
}

// programReports are the --json results about one program (SRC, or a program of a
// batch): each names it with the key program (tune --shapes and --lengths once said
// source, where sim --lengths and tune said program).
func programReports() []any {
	return []any{compiler.CompileResult{}, tpusim.Report{}, ragged.Report{}, eval.ProgramReport{},
		tune.Report{}, tune.ShapesReport{}, tune.RaggedReport{}, tune.ShapeResult{}}
}

// TestJSONProgramKey: every report about one program names it program (a string), and
// none says source for it.
func TestJSONProgramKey(t *testing.T) {
	for _, v := range programReports() {
		keys := map[string]string{}
		walkKeys(reflect.TypeOf(v), "", map[reflect.Type]bool{}, func(path, key string, ft reflect.Type) {
			if path == "" {
				keys[key] = jsonType(ft)
			}
		})
		if keys["program"] != "string" {
			t.Errorf("%T: top-level program is %q, want a string", v, keys["program"])
		}
		if _, ok := keys["source"]; ok {
			t.Errorf("%T: the program is program, not source", v)
		}
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

// walkKeys calls f with the JSON path, key and Go type of every struct field reachable
// from t, as encoding/json writes it (embedded structs promoted; map keys are data, not
// names).
func walkKeys(t reflect.Type, path string, seen map[reflect.Type]bool, f func(path, key string, ft reflect.Type)) {
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
		f(path, name, fd.Type)
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
			// cobra's completion commands print a shell's script, never JSON.
			if s.IsAvailableCommand() && !(c.Parent() == nil && s.Name() == "completion") {
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
			walkKeys(reflect.TypeOf(v), "", map[reflect.Type]bool{}, func(path, key string, _ reflect.Type) {
				if why := vocabularyError(key); why != "" {
					t.Errorf("%s --json: key %s%s: %s", name, strings.TrimPrefix(path+".", "."), key, why)
				}
			})
		}
	}
	// Metric names are keys too (train's val.metrics, the checkpoint's metric).
	for _, m := range gnn.Metrics() {
		if why := vocabularyError(m); why != "" {
			t.Errorf("metric name %s: %s", m, why)
		}
	}
	// So are the config kinds (a config's keys, tune --shapes' configs): every registered
	// kind is a key of compiler.Config, named by the registry (compiler.Kinds), and keeps
	// the rule.
	configKeys := map[string]bool{}
	walkKeys(reflect.TypeFor[compiler.Config](), "", map[reflect.Type]bool{}, func(path, key string, _ reflect.Type) {
		if path == "" {
			configKeys[key] = true
		}
	})
	for _, k := range compiler.Kinds() {
		if !configKeys[string(k)] {
			t.Errorf("config kind %s is no key of a config (compiler.Config)", k)
		}
		if why := vocabularyError(string(k)); why != "" {
			t.Errorf("config kind %s: %s", k, why)
		}
	}
}

// jsonType is the JSON type encoding/json writes for a value of Go type t: "string",
// "number", "bool", "object", "array of T", or "" when the type alone does not say (an
// interface, or a json.Marshaler this function does not know).
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	marshaler := reflect.TypeFor[json.Marshaler]()
	switch {
	case t == reflect.TypeFor[tpusim.Entry](): // a kernel or a control step
		return "object"
	case t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler):
		if t.Kind() == reflect.Struct {
			return "object" // the commands' results: one of their reports
		}
		return ""
	case t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[encoding.TextMarshaler]()):
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "string" // base64
		}
		if e := jsonType(t.Elem()); e != "" {
			return "array of " + e
		}
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return ""
}

// keyTypes maps every key every command can print with --json to its JSON types and,
// per type, where it appears ("command: path.key"). A config (compiler.Config, as tune
// --shapes prints each size's) is one value of the config file's own format
// (docs/compiler.md#configs, keyed by config kind and node): its inner keys are not
// the commands' vocabulary.
func keyTypes(outs map[string][]any) map[string]map[string][]string {
	types := map[string]map[string][]string{}
	configType := reflect.TypeFor[compiler.Config]()
	for name, vs := range outs {
		for _, v := range vs {
			var configs []string // paths of configs met so far (walkKeys goes depth first)
			walkKeys(reflect.TypeOf(v), "", map[reflect.Type]bool{}, func(path, key string, ft reflect.Type) {
				for _, c := range configs {
					if path == c || strings.HasPrefix(path, c+".") {
						return
					}
				}
				if reflect.PointerTo(configType) == ft || configType == ft {
					configs = append(configs, path+"."+key)
				}
				jt := jsonType(ft)
				if jt == "" {
					return
				}
				if types[key] == nil {
					types[key] = map[string][]string{}
				}
				types[key][jt] = append(types[key][jt], name+": "+strings.TrimPrefix(path+"."+key, "."))
			})
		}
	}
	return types
}

// keyTypeExceptions are the keys that still have more than one JSON type, each with the
// types it has and why it is left so. Most are a collection's count beside the
// collection itself elsewhere (kernels: 12 in eval and tune, [{...}] in compile and
// sim); renaming a count (to kernel_count, ...) breaks every script that reads it, and
// is left to a change of its own. A key not listed here must have one type, and a
// listed key no other type than those: a kernel's tile is an array of numbers
// everywhere, and never again "8x128x512".
var keyTypeExceptions = map[string]struct {
	types []string
	why   string
}{
	"kernels":      {[]string{"array of object", "array of string", "number"}, "a count (eval, inspect, train, tune), the kernels (compile, sim, predict), their names (calibrate)"},
	"programs":     {[]string{"array of object", "array of string", "number"}, "a count (eval, inspect), the programs (gym eval), their names (gym train, tune train-policy)"},
	"rows":         {[]string{"array of object", "number"}, "a count (gen, inspect), the rows scored (predict --data)"},
	"files":        {[]string{"array of object", "array of string", "number"}, "a count (export, import), the files (inspect), their names (validate)"},
	"runs":         {[]string{"array of object", "number"}, "a count (import tpugraphs), the runs replayed (validate)"},
	"datasets":     {[]string{"array of object", "object"}, "the datasets written (import tpugraphs), by task (demo)"},
	"shapes":       {[]string{"array of object", "string"}, "the sizes tuned (tune --shapes), a --shapes value (inspect's provenance)"},
	"config":       {[]string{"array of string", "object", "string"}, "a config (tune --shapes), a run's config text (validate), the config feature names (inspect)"},
	"kernel":       {[]string{"array of string", "string"}, "a kernel's name (predict --data), the kernel feature names (inspect)"},
	"history":      {[]string{"array of number", "array of object"}, "the epochs (train, gym train), an observation's past actions (gym serve)"},
	"loss":         {[]string{"number", "string"}, "the loss's value (train's history) and its name (train, predict)"},
	"metric":       {[]string{"number", "string"}, "the metric's value (train's history) and its name (train, eval)"},
	"before":       {[]string{"number", "object"}, "a constant's value before the fit, the scores before it (calibrate)"},
	"after":        {[]string{"number", "object"}, "a constant's value after the fit, the scores after it (calibrate)"},
	"default":      {[]string{"bool", "object"}, "XLA's default config's scores, a run is the default (validate)"},
	"error":        {[]string{"number", "string"}, "a skipped kernel's error (validate), a request's error message (gym serve)"},
	"model_guided": {[]string{"bool", "object"}, "tune's flag, demo's model-guided tuning report"},
	"accuracy":     {[]string{"number", "object"}, "bitserial: the networks' accuracies {float32, int8, pool}, and one b's (bits[].accuracy), as issue 37 specifies"},
}

// TestJSONKeyTypes checks that a key has one JSON type everywhere any command prints it
// (kernels[].tile was an array in compile and a string "2048x128x256" in sim and predict),
// but for keyTypeExceptions, which must each still be needed. An array's element type
// counts: a tile is an array of numbers everywhere.
func TestJSONKeyTypes(t *testing.T) {
	types := keyTypes(jsonOutputs())
	for key, byType := range types {
		ex, excepted := keyTypeExceptions[key]
		var desc []string
		for jt, where := range byType {
			slices.Sort(where)
			desc = append(desc, fmt.Sprintf("%s (%s)", jt, strings.Join(where, ", ")))
			if excepted && !slices.Contains(ex.types, jt) {
				t.Errorf("key %q is also %s: its types are %s (%s)", key, desc[len(desc)-1], strings.Join(ex.types, ", "), ex.why)
			}
		}
		if len(byType) > 1 && !excepted {
			slices.Sort(desc)
			t.Errorf("key %q has %d JSON types: %s", key, len(byType), strings.Join(desc, "; "))
		}
	}
	for key, ex := range keyTypeExceptions {
		for _, jt := range ex.types {
			if len(types[key][jt]) == 0 {
				t.Errorf("keyTypeExceptions[%q] lists %s, which no command prints any more: drop it", key, jt)
			}
		}
	}
}
