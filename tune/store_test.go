package tune

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

func openStore(t *testing.T, path, chip string) *Store {
	t.Helper()
	s, err := OpenStore(path, chip, tpusim.Version)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreRecordsAndLookups(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	s := openStore(t, path, "v4")
	other := openStore(t, path, "v5e")
	recs := []Record{
		{Kind: compiler.KindLayout, Key: "n1", Entry: compiler.Entry{Layout: []int{0, 1}}, Ns: 100, Program: "a"},
		{Kind: compiler.KindFusion, Key: "e1", Entry: compiler.Entry{Fusion: true}, Ns: 50, Program: "a"},
		{Kind: compiler.KindTile, Key: "k1", Entry: compiler.Entry{Tile: cost.Tile{8, 128}, Flags: cost.DefaultFlags()}, Ns: 30, Program: "a"},
		{Kind: compiler.KindTile, Key: "k0", Entry: compiler.Entry{Tile: cost.Tile{}, Flags: cost.Flags{Unroll: 1, PipelineDepth: 1}}, Ns: 5, Program: "a"},
	}
	if err := s.Record(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Slower records do not replace faster ones; faster ones do.
	if err := s.Record(ctx, []Record{
		{Kind: compiler.KindTile, Key: "k1", Entry: compiler.Entry{Tile: cost.Tile{16, 128}, Flags: cost.DefaultFlags()}, Ns: 31, Program: "b"},
		{Kind: compiler.KindFusion, Key: "e1", Entry: compiler.Entry{Fusion: false}, Ns: 49, Program: "b"},
	}); err != nil {
		t.Fatal(err)
	}
	if e, ok := s.Lookup(compiler.KindLayout, "n1"); !ok || e.Layout[0] != 0 || e.Layout[1] != 1 {
		l := e.Layout
		t.Errorf("layout n1 = %v, %v", l, ok)
	}
	if e, ok := s.Lookup(compiler.KindFusion, "e1"); !ok || e.Fusion {
		t.Errorf("fusion e1 = %v, %v; want the faster false", e.Fusion, ok)
	}
	if e, ok := s.Lookup(compiler.KindTile, "k1"); !ok || !e.Tile.Equal(cost.Tile{8, 128}) {
		t.Errorf("tile k1 = %v, %v; want the faster 8x128", e.Tile, ok)
	}
	if e, ok := s.Lookup(compiler.KindTile, "k0"); !ok || len(e.Tile) != 0 {
		t.Errorf("untiled kernel k0: tile %v, %v", e.Tile, ok)
	}
	if e, ok := s.Lookup(compiler.KindFlags, "k1"); !ok || e.Flags != cost.DefaultFlags() {
		t.Errorf("flags k1 = %v, %v", e.Flags, ok)
	}
	if _, ok := s.Lookup(compiler.KindTile, "missing"); ok {
		t.Error("missing key found")
	}
	// Another chip sees none of it.
	if _, ok := other.Lookup(compiler.KindTile, "k1"); ok {
		t.Error("v5e store sees v4 records")
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := snap.Lookup(compiler.KindTile, "k1"); !ok || !e.Tile.Equal(cost.Tile{8, 128}) {
		t.Errorf("snapshot tile k1 = %v, %v", e.Tile, ok)
	}
	if e, ok := snap.Lookup(compiler.KindFlags, "k1"); !ok || e.Flags != cost.DefaultFlags() {
		t.Errorf("snapshot flags k1 = %v, %v", e.Flags, ok)
	}
	if e, ok := snap.Lookup(compiler.KindFusion, "e1"); !ok || e.Fusion {
		t.Errorf("snapshot fusion e1 = %v, %v", e.Fusion, ok)
	}
	all, err := s.Records(ctx)
	if err != nil || len(all) != 4 {
		t.Fatalf("%d records, %v", len(all), err)
	}
	for _, k := range []compiler.Kind{compiler.KindFlags, "bogus"} {
		if err := s.Record(ctx, []Record{{Kind: k, Key: "x", Entry: compiler.Entry{Flags: cost.DefaultFlags()}, Ns: 1}}); err == nil {
			t.Errorf("a record of kind %q was stored", k)
		}
	}
	// The schema is unchanged: a kernel's tile record is a 'kernel' row.
	var col string
	if err := s.db.QueryRow(`SELECT kind FROM configs WHERE key = 'k1'`).Scan(&col); err != nil || col != "kernel" {
		t.Errorf("kind column of a tile record: %q, %v; want kernel", col, err)
	}
	var _ compiler.Store = s
	var _ ConfigStore = s
	// A damaged value is reported by record, in JSON terms (not Go types).
	if _, err := s.db.ExecContext(ctx, `UPDATE configs SET value = '"x"' WHERE kind = 'layout' AND key = 'n1'`); err != nil {
		t.Fatal(err)
	}
	want := "config store " + path + ": layout n1: want a list of integers, got a string"
	if _, err := s.Records(ctx); err == nil || err.Error() != want {
		t.Errorf("damaged value: %v, want %s", err, want)
	}
}

// TestStoreConcurrentWriters: many goroutines on two handles upsert overlapping keys; no
// record is lost and every key keeps its minimum time.
func TestStoreConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "store.db")
	handles := []*Store{openStore(t, path, "v4"), openStore(t, path, "v4")}
	const writers, batches, keys = 8, 12, 40
	want := make([]float64, keys)
	for i := range want {
		want[i] = 1e18
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			s := handles[w%2]
			for b := 0; b < batches; b++ {
				var recs []Record
				for j := 0; j < 5; j++ {
					k := rng.IntN(keys)
					ns := float64(rng.IntN(1_000_000) + 1)
					recs = append(recs, Record{Kind: compiler.KindTile, Key: fmt.Sprintf("k%02d", k),
						Entry: compiler.Entry{Tile: cost.Tile{8 * (1 + rng.IntN(4))}, Flags: cost.DefaultFlags()}, Ns: ns, Program: fmt.Sprintf("w%d", w)})
					mu.Lock()
					want[k] = min(want[k], ns)
					mu.Unlock()
				}
				if err := s.Record(ctx, recs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := handles[1].Records(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for k, w := range want {
		if w < 1e18 {
			n++
		}
		_ = k
	}
	if len(got) != n {
		t.Errorf("%d records, %d keys written", len(got), n)
	}
	for _, r := range got {
		var k int
		fmt.Sscanf(r.Key, "k%d", &k)
		if r.Ns != want[k] {
			t.Errorf("key %s: ns %g, min written %g", r.Key, r.Ns, want[k])
		}
	}
}

// TestStoreSpeedsUpNextRun: tuning a model records its kernels; the next tuning of a model
// that shares them starts from the recorded configs.
func TestStoreSpeedsUpNextRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s := openStore(t, path, "v4")
	chip := testChip(t)
	m, err := zoo.Resolve("mlp_768x3_b8")
	if err != nil {
		t.Fatal(err)
	}
	first := mustRun(t, m, Options{Chip: chip, Budget: 120, Seed: 1, Store: s})
	if first.StoreRecords == 0 || first.StartNs != first.DefaultNs {
		t.Fatalf("first run: %d records, start %.0f vs default %.0f", first.StoreRecords, first.StartNs, first.DefaultNs)
	}
	second := mustRun(t, m, Options{Chip: chip, Budget: 10, Seed: 1, Store: openStore(t, path, "v4")})
	if second.StartNs >= first.DefaultNs {
		t.Errorf("second run starts at %.0f ns, no better than the default %.0f ns", second.StartNs, first.DefaultNs)
	}
	if second.TunedNs > first.TunedNs*1.02 {
		t.Errorf("second run with 10 measurements: %.0f ns, first run reached %.0f ns", second.TunedNs, first.TunedNs)
	}
	t.Logf("default %.0f, first tuned %.0f; second starts %.0f, tuned %.0f", first.DefaultNs, first.TunedNs, second.StartNs, second.TunedNs)
}
