package compiler

import (
	"context"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// CompileFile is CompileFileContext under context.Background().
func CompileFile(m *hlo.Module, cfgPath string, opts Options) (*Program, error) {
	return CompileFileContext(context.Background(), m, cfgPath, opts)
}

// CompileFileContext compiles m under opts with the config file at cfgPath, read under
// ctx (ReadConfigContext): empty, the defaults; given, strictly (Options.Strict: a config
// naming nodes the program lacks is an error).
func CompileFileContext(ctx context.Context, m *hlo.Module, cfgPath string, opts Options) (*Program, error) {
	var cfg *Config
	if cfgPath != "" {
		var err error
		if cfg, err = ReadConfigContext(ctx, cfgPath); err != nil {
			return nil, err
		}
	}
	opts.Strict = cfgPath != ""
	return Compile(m, cfg, opts)
}
