// Package buildinfo says which tpucost this is: the module version and commit the binary
// was built from, and the versions that decide whether data and models are comparable
// (simulator, feature schema, dataset schema, generator). `tpucost --version` prints it.
//
// buildinfo is on the ground floor: it imports no project package. The packages that own
// the versions (tpusim, features, dataset, dataset/gen) are above it, so the caller (the
// CLI) hands them in as Versions.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Versions are the data and model versions the binary was built with, each owned by its
// package: tpusim.Version, features.SchemaVersion, dataset.SchemaVersion, gen.Version.
type Versions struct {
	Simulator     string
	FeatureSchema int
	DatasetSchema int
	Generator     string
}

// Info is what Read finds; `tpucost --version --json` prints it. Its keys are the ones
// dataset provenance and checkpoints use for the same versions.
type Info struct {
	Module        string `json:"module"`
	Version       string `json:"module_version"` // the module version, "(devel)" for a build from a work tree
	Commit        string `json:"commit"`         // the VCS revision, "unknown" without VCS stamping
	Modified      bool   `json:"modified"`       // built from a work tree with uncommitted changes
	Go            string `json:"go"`
	Simulator     string `json:"simulator_version"`
	FeatureSchema int    `json:"feature_schema_version"`
	DatasetSchema int    `json:"schema_version"` // dataset.SchemaVersion, as a dataset's provenance says
	Generator     string `json:"generator_version"`
}

// Read returns the Info of the running binary with the versions v.
func Read(v Versions) Info {
	i := Info{Module: "github.com/tpucost/tpucost", Version: "(devel)", Commit: "unknown", Simulator: v.Simulator,
		FeatureSchema: v.FeatureSchema, DatasetSchema: v.DatasetSchema, Generator: v.Generator}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return i
	}
	i.Go = bi.GoVersion
	if bi.Main.Path != "" {
		i.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		i.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Commit = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is one line: "tpucost (devel) commit abc123 (modified), simulator tpusim-1.2,
// feature schema 4, dataset schema 1, generator gen-2, go1.26.0".
func (i Info) String() string {
	commit := i.Commit
	if i.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("tpucost %s commit %s, simulator %s, feature schema %d, dataset schema %d, generator %s, %s",
		i.Version, commit, i.Simulator, i.FeatureSchema, i.DatasetSchema, i.Generator, i.Go)
}
