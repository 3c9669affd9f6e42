package tune

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/internal/jsonerr"
)

// Record is one entry of the global config store: the best known choice of one kind
// (compiler.Kind) for one node key, with the time it was measured at. A layout record is
// keyed by compiler.NodeKey, a fusion record by compiler.EdgeKey. A kernel's choice is
// one KindTile record keyed by compiler.KernelKey whose entry holds the tile and the flags
// it was measured with (a tile's time depends on its flags): the store answers both tile
// and flags lookups from it, and has no KindFlags records. For kernels Ns is the kernel's
// measured time; for layout and fusion choices it is the summed time of the kernels the
// choice shapes (those holding the node, its users and its copies; or the edge's producer
// and consumer), so that choices for the same key compare across programs.
type Record struct {
	Kind compiler.Kind `json:"kind"`
	Key  string        `json:"key"`
	compiler.Entry
	Ns      float64 `json:"ns"`
	Program string  `json:"program"` // the program whose tuning found it
}

// The store's kind column names a kernel record 'kernel' (schema version 1).
const kernelKind = "kernel"

// storeKind is the kind column's value for records of kind k.
func storeKind(k compiler.Kind) (string, error) {
	switch k {
	case compiler.KindLayout, compiler.KindFusion:
		return string(k), nil
	case compiler.KindTile:
		return kernelKind, nil
	}
	return "", fmt.Errorf("records of kind %q are not stored (flags are recorded with their tile, kind %q)", k, compiler.KindTile)
}

// recordKind is the kind of a row whose kind column is col.
func recordKind(col string) compiler.Kind {
	if col == kernelKind {
		return compiler.KindTile
	}
	return compiler.Kind(col)
}

// ConfigStore is a global config store as the tuner uses it: a consistent snapshot for
// candidate repair during a run, and the run's results recorded at its end.
type ConfigStore interface {
	// Snapshot returns the current best choices; it must not change afterwards.
	Snapshot(ctx context.Context) (compiler.Store, error)
	// Record upserts recs, keeping for every key the record with the lowest time.
	Record(ctx context.Context, recs []Record) error
}

// storeSchema is the schema of the SQLite config store (schema version 1):
//
//	CREATE TABLE meta (
//	  name  TEXT PRIMARY KEY,           -- 'schema_version'
//	  value TEXT NOT NULL
//	);
//	CREATE TABLE configs (
//	  chip       TEXT NOT NULL,         -- chip preset, e.g. 'v4'
//	  simulator  TEXT NOT NULL,         -- simulator version, e.g. 'tpusim-1.0'
//	  kind       TEXT NOT NULL,         -- 'layout' | 'fusion' | 'kernel'
//	  key        TEXT NOT NULL,         -- NodeKey | EdgeKey | KernelKey (16 hex digits)
//	  value      TEXT NOT NULL,         -- JSON: layout [minor-to-major...]; fusion true|false;
//	                                    --   kernel {"tile":[...],"flags":{"double_buffer":..,"unroll":..,"pipeline_depth":..}}
//	  ns         REAL NOT NULL,         -- measured time (see Record)
//	  program    TEXT NOT NULL,         -- program whose tuning found it
//	  updated_at TEXT NOT NULL,         -- RFC 3339 UTC
//	  PRIMARY KEY (chip, simulator, kind, key)
//	) WITHOUT ROWID;
//
// Rows are upserted keeping the lowest ns per primary key. For example, the kernels with
// their best tiles on v4:
//
//	sqlite3 store.db "SELECT key, json_extract(value,'$.tile'), ns FROM configs WHERE chip='v4' AND kind='kernel'"
const storeSchema = `
CREATE TABLE IF NOT EXISTS meta (
  name  TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS configs (
  chip       TEXT NOT NULL,
  simulator  TEXT NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('layout', 'fusion', 'kernel')),
  key        TEXT NOT NULL,
  value      TEXT NOT NULL,
  ns         REAL NOT NULL,
  program    TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  PRIMARY KEY (chip, simulator, kind, key)
) WITHOUT ROWID;
INSERT INTO meta(name, value) VALUES ('schema_version', '1') ON CONFLICT(name) DO NOTHING;
`

const upsertSQL = `
INSERT INTO configs (chip, simulator, kind, key, value, ns, program, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (chip, simulator, kind, key) DO UPDATE SET
  value = excluded.value, ns = excluded.ns, program = excluded.program, updated_at = excluded.updated_at
WHERE excluded.ns < configs.ns`

// Store is the global config store in an SQLite database (pure-Go driver
// modernc.org/sqlite), holding the best known config per node key for every chip and
// simulator version; a Store reads and writes the rows of one chip and simulator version.
// It implements compiler.Store (each lookup is a query; lookups that fail report "not
// found") and ConfigStore. The database is in WAL mode with a busy timeout, and every
// Record call is one immediate transaction of upserts that keep the minimum time, so
// concurrent writers — goroutines, handles or processes — lose no records. Safe for
// concurrent use.
type Store struct {
	db              *sql.DB
	path            string
	chip, simulator string
}

// OpenStore opens (creating if needed) the store database at path for one chip and
// simulator version.
func OpenStore(path, chip, simulator string) (*Store, error) {
	if chip == "" || simulator == "" {
		return nil, fmt.Errorf("config store %s: chip and simulator version are required", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config store %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Set("_txlock", "immediate")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("config store %s: %w", path, err)
	}
	s := &Store{db: db, path: path, chip: chip, simulator: simulator}
	if err := s.withTx(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(storeSchema)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("config store %s: creating schema: %w", path, err)
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path is the database file.
func (s *Store) Path() string { return s.path }

func (s *Store) withTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	return tx.Commit()
}

type kernelValue struct {
	Tile  cost.Tile  `json:"tile"`
	Flags cost.Flags `json:"flags"`
}

func recordValue(r Record) (string, error) {
	var v any
	switch r.Kind {
	case compiler.KindLayout:
		if len(r.Layout) == 0 {
			return "", fmt.Errorf("layout record %s has no layout", r.Key)
		}
		v = r.Layout
	case compiler.KindFusion:
		v = r.Fusion
	case compiler.KindTile:
		if err := r.Flags.Validate(); err != nil {
			return "", fmt.Errorf("kernel record %s: %w", r.Key, err)
		}
		t := r.Tile
		if t == nil {
			t = cost.Tile{}
		}
		v = kernelValue{Tile: t, Flags: r.Flags}
	default:
		return "", fmt.Errorf("record %s: unknown kind %q", r.Key, r.Kind)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Record upserts recs in one transaction, keeping for every key the record with the
// lowest time (an equal time keeps the existing record).
func (s *Store) Record(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	now := time.Now().UTC().Format(time.RFC3339)
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, upsertSQL)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, r := range recs {
			v, err := recordValue(r)
			if err != nil {
				return err
			}
			kind, err := storeKind(r.Kind)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, s.chip, s.simulator, kind, r.Key, v, r.Ns, r.Program, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("config store %s: recording %d records: %w", s.path, len(recs), err)
	}
	return nil
}

// Records returns every record of the store's chip and simulator version, ordered by
// kind and key.
func (s *Store) Records(ctx context.Context) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT kind, key, value, ns, program FROM configs
		WHERE chip = ? AND simulator = ? ORDER BY kind, key`, s.chip, s.simulator)
	if err != nil {
		return nil, fmt.Errorf("config store %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var kind, value string
		if err := rows.Scan(&kind, &r.Key, &value, &r.Ns, &r.Program); err != nil {
			return nil, fmt.Errorf("config store %s: %w", s.path, err)
		}
		r.Kind = recordKind(kind)
		if err := decodeValue(&r, value, fmt.Sprintf("config store %s: %s %s", s.path, kind, r.Key)); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("config store %s: %w", s.path, err)
	}
	return out, nil
}

// decodeValue decodes the JSON value of a record of r's kind into r; errors name where
// ("config store FILE: KIND KEY") and say what is wrong without Go types (jsonerr).
func decodeValue(r *Record, value, where string) error {
	switch r.Kind {
	case compiler.KindLayout:
		return jsonerr.Unmarshal(where, []byte(value), &r.Layout)
	case compiler.KindFusion:
		return jsonerr.Unmarshal(where, []byte(value), &r.Fusion)
	case compiler.KindTile:
		var kv kernelValue
		if err := jsonerr.Unmarshal(where, []byte(value), &kv); err != nil {
			return err
		}
		r.Tile, r.Flags = kv.Tile, kv.Flags
		return nil
	}
	return fmt.Errorf("%s: unknown kind %q", where, r.Kind)
}

// recordOf maps a compiler.Store lookup of kind k to the kind of record that answers it:
// flags come from the kernel's (KindTile) record.
func recordOf(k compiler.Kind) compiler.Kind {
	if k == compiler.KindFlags {
		return compiler.KindTile
	}
	return k
}

// lookup returns the decoded record of kind kind for key.
func (s *Store) lookup(kind compiler.Kind, key string) (Record, bool) {
	col, err := storeKind(kind)
	if err != nil {
		return Record{}, false
	}
	var value string
	r := Record{Kind: kind, Key: key}
	err = s.db.QueryRow(`SELECT value, ns, program FROM configs WHERE chip = ? AND simulator = ? AND kind = ? AND key = ?`,
		s.chip, s.simulator, col, key).Scan(&value, &r.Ns, &r.Program)
	if err != nil || decodeValue(&r, value, "") != nil {
		return Record{}, false
	}
	return r, true
}

// Lookup implements compiler.Store: the recorded entry of kind k for key (a kernel's
// flags from its tile record). A layout or tile record without a value counts as absent.
func (s *Store) Lookup(k compiler.Kind, key string) (compiler.Entry, bool) {
	r, ok := s.lookup(recordOf(k), key)
	switch k {
	case compiler.KindLayout:
		ok = ok && len(r.Layout) > 0
	case compiler.KindTile:
		ok = ok && r.Tile != nil
	}
	return r.Entry, ok
}

// Snapshot implements ConfigStore: an immutable in-memory copy of the store's records.
func (s *Store) Snapshot(ctx context.Context) (compiler.Store, error) {
	recs, err := s.Records(ctx)
	if err != nil {
		return nil, err
	}
	return NewSnapshot(recs), nil
}

// Snapshot is an immutable compiler.Store built from records (the last record of a kind
// and key wins). Safe for concurrent use.
type Snapshot struct {
	m map[compiler.Kind]map[string]compiler.Entry
}

// NewSnapshot builds a snapshot of recs.
func NewSnapshot(recs []Record) *Snapshot {
	s := &Snapshot{m: map[compiler.Kind]map[string]compiler.Entry{}}
	for _, r := range recs {
		if s.m[r.Kind] == nil {
			s.m[r.Kind] = map[string]compiler.Entry{}
		}
		e := r.Entry
		e.Layout, e.Tile = slices.Clone(e.Layout), slices.Clone(e.Tile)
		s.m[r.Kind][r.Key] = e
	}
	return s
}

// Len is the number of records in the snapshot.
func (s *Snapshot) Len() int {
	n := 0
	for _, m := range s.m {
		n += len(m)
	}
	return n
}

// Lookup implements compiler.Store (a kernel's flags from its tile record).
func (s *Snapshot) Lookup(k compiler.Kind, key string) (compiler.Entry, bool) {
	e, ok := s.m[recordOf(k)][key]
	e.Layout, e.Tile = slices.Clone(e.Layout), slices.Clone(e.Tile)
	return e, ok
}
