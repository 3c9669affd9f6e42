package compiler

import "github.com/tpucost/tpucost/compiler/hlo"

// CompileFile compiles m under opts with the config file at cfgPath (ReadConfig): empty,
// the defaults; given, strictly (Options.Strict: a config naming nodes the program lacks
// is an error).
func CompileFile(m *hlo.Module, cfgPath string, opts Options) (*Program, error) {
	var cfg *Config
	if cfgPath != "" {
		var err error
		if cfg, err = ReadConfig(cfgPath); err != nil {
			return nil, err
		}
	}
	opts.Strict = cfgPath != ""
	return Compile(m, cfg, opts)
}
