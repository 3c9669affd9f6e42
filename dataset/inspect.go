package dataset

import (
	"path/filepath"
	"slices"
)

// RuntimeStats summarizes runtimes in ns.
type RuntimeStats struct {
	Min    float64 `json:"min_ns"`
	Median float64 `json:"median_ns"`
	Max    float64 `json:"max_ns"`
}

// FileSummary describes one complete part.
type FileSummary struct {
	Name      string `json:"name"`     // the rows file's base name
	OccName   string `json:"occ_name"` // the occurrences file's base name
	Shard     int    `json:"shard"`
	Part      int    `json:"part"`
	UnitFirst int64  `json:"unit_first"`
	UnitLast  int64  `json:"unit_last"`
	Rows      int64  `json:"rows"`       // rows stored, duplicates of other shards included
	Bytes     int64  `json:"size_bytes"` // both files
	SHA256    string `json:"sha256"`     // of the rows file, as its manifest lists and Open verified it
	OccSHA256 string `json:"occ_sha256"` // of the occurrences file
}

// ShardSummary describes one shard's complete parts.
type ShardSummary struct {
	Index int   `json:"index"`
	Count int   `json:"count"`
	Files int   `json:"files"` // complete parts (each a rows and an occurrences file)
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"size_bytes"`
}

// Column is one column of the rows schema.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Summary describes a dataset. Its JSON form (the `inspect --json` output) is snake_case
// with units in the names of quantities (_ns, _bytes).
type Summary struct {
	Dir                string         `json:"dir"`
	Format             Format         `json:"format"`
	Rows               int64          `json:"rows"`     // rows stored in all files
	Kernels            int64          `json:"kernels"`  // distinct kernel keys: the rows Rows streams
	Programs           int            `json:"programs"` // distinct programs of the occurrences
	Units              int            `json:"units"`    // distinct work units of the occurrences
	Occurrences        int            `json:"occurrences"`
	Samples            int64          `json:"samples"` // configs of the kept rows
	Tasks              []Task         `json:"tasks"`
	RuntimeNs          RuntimeStats   `json:"runtime_ns"` // over all samples of the kept rows
	SchemaVersion      int            `json:"schema_version"`
	FeatureVersion     int            `json:"feature_version"`
	NodeFeatureWidth   int            `json:"node_feature_width"`
	KernelFeatureWidth int            `json:"kernel_feature_width"`
	ConfigFeatureWidth int            `json:"config_feature_width"`
	Bytes              int64          `json:"size_bytes"`
	Manifests          []string       `json:"manifests"`      // the shards' manifests
	VerifiedFiles      int            `json:"verified_files"` // files whose size and SHA-256 Open checked against them
	Schema             []Column       `json:"schema"`
	Provenance         Provenance     `json:"provenance"`
	Files              []FileSummary  `json:"files"`
	Shards             []ShardSummary `json:"shards"`
}

// Inspect reads all of d and summarizes it. It keeps every runtime in memory to compute
// the exact median (8 bytes per sample).
func Inspect(d *Dataset) (*Summary, error) {
	s := &Summary{
		Dir:            d.Dir,
		Format:         d.Format,
		SchemaVersion:  d.Provenance.SchemaVersion,
		FeatureVersion: d.Provenance.FeatureSchema.Version,
		Provenance:     d.Provenance,
		Tasks:          []Task{},
		Files:          []FileSummary{},
		Shards:         []ShardSummary{},
		Manifests:      d.Manifests(),
	}
	sums := map[string]string{}
	for _, c := range d.Checksums() {
		sums[c.Name] = c.SHA256
	}
	s.VerifiedFiles = len(sums)
	s.NodeFeatureWidth, s.KernelFeatureWidth, s.ConfigFeatureWidth = d.Provenance.Widths()
	for _, f := range rowsFields(columnsOf(d.Provenance)) {
		s.Schema = append(s.Schema, Column{Name: f.Name, Type: f.Type.String()})
	}
	idx, err := d.keys(nil)
	if err != nil {
		return nil, err
	}
	s.Kernels = int64(len(idx.win))
	for i, p := range d.parts {
		fs := FileSummary{Name: filepath.Base(p.rows), OccName: filepath.Base(p.occ), Shard: p.shard, Part: p.part,
			UnitFirst: p.meta.UnitFirst, UnitLast: p.meta.UnitLast, Rows: idx.fileRows[i], Bytes: p.rowsBytes + p.occBytes,
			SHA256: sums[filepath.Base(p.rows)], OccSHA256: sums[filepath.Base(p.occ)]}
		s.Files = append(s.Files, fs)
		s.Rows += fs.Rows
		s.Bytes += fs.Bytes
		if n := len(s.Shards); n == 0 || s.Shards[n-1].Index != p.shard {
			s.Shards = append(s.Shards, ShardSummary{Index: p.shard, Count: p.count})
		}
		sh := &s.Shards[len(s.Shards)-1]
		sh.Files++
		sh.Rows += fs.Rows
		sh.Bytes += fs.Bytes
	}
	occ, err := d.Occurrences()
	if err != nil {
		return nil, err
	}
	programs, units := map[string]bool{}, map[int64]bool{}
	for _, o := range occ {
		programs[o.Program], units[o.Unit] = true, true
	}
	s.Programs, s.Units, s.Occurrences = len(programs), len(units), len(occ)
	var runtimes []float64
	err = d.Rows(ReadOptions{}, func(r *Row) error {
		s.Samples += int64(r.Samples())
		runtimes = append(runtimes, r.RuntimesNs...)
		if !slices.Contains(s.Tasks, r.Task) {
			s.Tasks = append(s.Tasks, r.Task)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(s.Tasks)
	if n := len(runtimes); n > 0 {
		slices.Sort(runtimes)
		s.RuntimeNs = RuntimeStats{Min: runtimes[0], Max: runtimes[n-1], Median: runtimes[n/2]}
		if n%2 == 0 {
			s.RuntimeNs.Median = (runtimes[n/2-1] + runtimes[n/2]) / 2
		}
	}
	return s, nil
}
