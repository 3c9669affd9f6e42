package zoo

import (
	"fmt"
	"os"
	"strings"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Resolve loads a module from src: a path to an HLO file (anything that exists as a file,
// or ends in .hlo/.txt/.pb) or the name of a zoo model. A file ending in .pb is binary HLO
// (a serialized xla.HloModuleProto or xla.HloProto, as --xla_dump_hlo_as_proto writes
// *.hlo.pb); any other file is HLO text. Modules whose entry reaches an unbounded dynamic
// dimension are refused (hlo.CheckBounded).
func Resolve(src string) (*hlo.Module, error) {
	if st, err := os.Stat(src); err == nil && !st.IsDir() {
		parse := hlo.ParseFile
		if strings.HasSuffix(src, ".pb") {
			parse = hlo.ParseProtoFile
		}
		m, err := parse(src)
		if err != nil {
			return nil, err
		}
		if err := hlo.CheckBounded(m); err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		return m, nil
	}
	if strings.HasSuffix(src, ".hlo") || strings.HasSuffix(src, ".txt") || strings.HasSuffix(src, ".pb") || strings.ContainsRune(src, os.PathSeparator) {
		return nil, fmt.Errorf("%s: no such HLO file", src)
	}
	m, err := Lookup(src)
	if err != nil {
		return nil, err
	}
	return m.Build()
}
