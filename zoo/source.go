package zoo

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Resolve loads a module from src: a path to an HLO file (anything that exists as a file,
// or ends in .hlo/.txt/.pb) or the name of a zoo model. A file ending in .pb is binary HLO
// (a serialized xla.HloModuleProto or xla.HloProto, as --xla_dump_hlo_as_proto writes
// *.hlo.pb); any other file is HLO text. Modules whose entry reaches an unbounded dynamic
// dimension are refused (hlo.CheckBounded). Resolve reads a file under
// context.Background() (ResolveContext).
func Resolve(src string) (*hlo.Module, error) { return ResolveContext(context.Background(), src) }

// ResolveContext is Resolve reading a file under ctx: within the size limit of its format
// (inputfile.Max: --max-input-bytes travels in ctx), and stopping when ctx is cancelled
// while the read waits (a FIFO with no writer).
func ResolveContext(ctx context.Context, src string) (*hlo.Module, error) {
	if m, isFile, err := resolveFile(ctx, src); isFile {
		return m, err
	}
	m, err := Lookup(src)
	if err != nil {
		return nil, err
	}
	return m.Build()
}

// resolveFile loads src when it names a file (isFile): one that exists, or a path that
// looks like one (then the error says it is missing).
func resolveFile(ctx context.Context, src string) (m *hlo.Module, isFile bool, err error) {
	st, err := os.Stat(src)
	if err == nil && st.IsDir() {
		return nil, true, fmt.Errorf("%s: is a directory; want an HLO file (text, or binary .pb) or a zoo model name (tpucost zoo list)", src)
	}
	if err == nil {
		parse := hlo.ParseFileContext
		if strings.HasSuffix(src, ".pb") {
			parse = hlo.ParseProtoFileContext
		}
		m, err := parse(ctx, src)
		if err != nil {
			return nil, true, err
		}
		if err := hlo.CheckBounded(m); err != nil {
			if m.File != "" { // text: file:line:col of the instruction
				return nil, true, m.Wrap(err)
			}
			return nil, true, fmt.Errorf("%s: %w", src, err)
		}
		return m, true, nil
	}
	if strings.HasSuffix(src, ".hlo") || strings.HasSuffix(src, ".txt") || strings.HasSuffix(src, ".pb") || strings.ContainsRune(src, os.PathSeparator) {
		return nil, true, fmt.Errorf("%s: no such HLO file", src)
	}
	return nil, false, nil
}

// Names lists every zoo model's name, in registry order.
func Names() []string {
	var names []string
	for _, m := range All() {
		names = append(names, m.Name)
	}
	return names
}

// ParseList splits a comma-separated list of sources (zoo model names or HLO files), as
// the --models flags of gen and tune take it. Spaces around names are dropped; an empty
// list or an empty name (a stray comma) is an error, never silently skipped.
func ParseList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no model named")
	}
	var names []string
	for i, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m == "" {
			return nil, fmt.Errorf("%q: name %d is empty", s, i+1)
		}
		names = append(names, m)
	}
	return names, nil
}

// Select returns the sources a command's --models/--all flags choose (gen and tune):
// every zoo model with all, else the parsed list (ParseList). Exactly one must be given;
// errors name the flags.
func Select(models string, all bool) ([]string, error) {
	switch {
	case all && models != "":
		return nil, fmt.Errorf("--all and --models %q: give one of them", models)
	case all:
		return Names(), nil
	case models == "":
		return nil, fmt.Errorf("give --models a,b or --all")
	}
	names, err := ParseList(models)
	if err != nil {
		return nil, fmt.Errorf("--models: %w", err)
	}
	return names, nil
}

// Variant is the model variant of a program, what held-out evaluation holds out: a zoo
// model's inference graph and training step ("mlp_96x2_b1", "mlp_96x2_b1_train") and its
// batch sizes ("resnet18_b1", "resnet18_b32") are one variant, named by the model name
// without the "_train" and "_bN" suffixes ("mlp_96x2", "resnet18"). Any other program (a
// bundled dump, an HLO file) is its own variant, with the same suffixes stripped. A
// program built at a shape ("bert_tiny_s128_b32@seq=64", --shapes) is its model's variant.
func Variant(program string) string {
	if i := strings.IndexByte(program, '@'); i > 0 {
		program = program[:i]
	}
	v := strings.TrimSuffix(program, "_train")
	if i := strings.LastIndex(v, "_b"); i > 0 && i+2 < len(v) && allDigits(v[i+2:]) {
		v = v[:i]
	}
	return v
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// SeenVariant returns the first of trained that is the same model variant as program
// (Variant), if any: evaluating on it would not be held out.
func SeenVariant(trained []string, program string) (string, bool) {
	v := Variant(program)
	for _, t := range trained {
		if Variant(t) == v {
			return t, true
		}
	}
	return "", false
}
