package compiler

import (
	"container/list"
	"fmt"
	"slices"
	"sync"

	"github.com/tpucost/tpucost/compiler/cost"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// KernelCache shares kernel analyses (cost.KernelInfo and the tile options, each planned
// once as a cost.Planned, with the default) across compiles of programs for one target: a
// kernel key names a fused computation structurally, so every compile that forms the same
// kernel gets the same, read-only analysis and planned options, and every choice of a
// program (Kernel.Choice, TileChoice.Planned) is one of them. Dataset generation and tuning, which
// compile one module under many configs, pass one cache to all their compiles. Safe for
// concurrent use; the zero value is ready; a nil *KernelCache caches nothing.
//
// It also memoizes the config-independent prefix of the pass list (preparation and the
// simplification group, see Pass) per input module, prefix (by pass names) and
// Options.Check: a module compiled with a cache is identified by its pointer and must not
// be modified afterwards.
//
// MaxKernels, when positive, bounds the kernel analyses kept: the least recently used is
// dropped first, and a later compile that forms its kernel analyzes it again (the same
// analysis: it depends on the key and target only). Zero keeps every analysis, which a
// run that compiles one program's variants for long (dataset generation) cannot afford:
// there they were 90% of the live heap, growing with every config.
type KernelCache struct {
	MaxKernels int

	mu   sync.Mutex
	m    map[kernelCacheKey]*kernelOnce
	lru  *list.List // of kernelCacheKey, most recently used first (with MaxKernels)
	prep map[prepKey]*prepOnce
}

type kernelCacheKey struct {
	key string
	t   cost.Target
}

type kernelOnce struct {
	once sync.Once
	kc   *kernelCache
	elem *list.Element // its place in KernelCache.lru
}

func (c *KernelCache) get(key string, t cost.Target, compute func() *kernelCache) *kernelCache {
	if c == nil {
		return compute()
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[kernelCacheKey]*kernelOnce{}
	}
	k := kernelCacheKey{key, t}
	e := c.m[k]
	if e == nil {
		e = &kernelOnce{}
		c.m[k] = e
	}
	if c.MaxKernels > 0 {
		if c.lru == nil {
			c.lru = list.New()
		}
		if e.elem == nil {
			e.elem = c.lru.PushFront(k)
		} else {
			c.lru.MoveToFront(e.elem)
		}
		for c.lru.Len() > c.MaxKernels {
			old := c.lru.Remove(c.lru.Back()).(kernelCacheKey)
			delete(c.m, old) // a caller holding its entry still computes and reads it
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.kc = compute() })
	return e.kc
}

// kernelCache is the analysis of one kernel key: its cost.KernelInfo and its tile
// options, planned (cost.KernelInfo.Options: each option's plan is computed here, once per
// key, and read by every later use of the option), with the default (or why it has none).
type kernelCache struct {
	info    *cost.KernelInfo
	opts    []cost.Planned
	tiles   []cost.Tile // the options' tiles (shared with every Space that lists them)
	defTile int
	err     error
}

// analyzeKernel analyzes a fused computation (whose KernelKey is key) and plans its tile
// options and default tile.
func analyzeKernel(fc *hlo.Computation, key string, t cost.Target) *kernelCache {
	kc := &kernelCache{}
	kc.info, kc.err = cost.Analyze(fc, t)
	if kc.err != nil {
		return kc
	}
	kc.opts = kc.info.Options(key, t, cost.DefaultFlags())
	if len(kc.opts) > 0 {
		kc.defTile, _ = cost.BestAnalytical(kc.opts)
	} else {
		// Nothing fits with double buffering: fall back to single buffers (the first).
		kc.opts, kc.defTile = kc.info.Options(key, t, cost.Flags{Unroll: 1, PipelineDepth: 1}), 0
	}
	if len(kc.opts) == 0 {
		kc.err = fmt.Errorf("%w: no tile of this kernel fits in %s's VMEM", cost.ErrTileInvalid, t.Name)
	}
	kc.tiles = make([]cost.Tile, len(kc.opts))
	for i, o := range kc.opts {
		kc.tiles[i] = o.Config.Tile
	}
	return kc
}

func setExtra(in *hlo.Instruction, key, value string) {
	for i, a := range in.Extra {
		if a.Key == key {
			in.Extra[i].Value = value
			return
		}
	}
	in.Extra = append(in.Extra, hlo.Attr{Key: key, Value: value})
}

func tileAttr(t cost.Tile) string {
	s := "{"
	for i, x := range t {
		if i > 0 {
			s += ","
		}
		s += itoa(x)
	}
	return s + "}"
}

// runTiling is the tiling pass: each kernel takes a tile from its valid options (sizes
// aligned to (8,128) and fitting VMEM with double buffering): the config's entry for its
// key, else the store's, else the argmin of the analytical model. The tile is recorded on
// the fusion instruction as tile={...}. It sets each KernelSite's Key and Info
// (ProductTiles); a key's analysis comes from this compile's earlier kernels, else from
// Options.Kernels (shared across compiles), else is computed.
func runTiling(m *hlo.Module, s *State) (bool, error) {
	changed := false
	t := s.Options.Target
	analyses := map[string]*kernelCache{}
	tileIdx := map[string]int{} // key -> index in s.Space.Tile
	for _, site := range s.Kernels {
		in := site.Fusion
		key := KernelKey(in.Calls)
		kc, ok := analyses[key]
		if !ok {
			kc = s.Options.Kernels.get(key, t, func() *kernelCache { return analyzeKernel(in.Calls, key, t) })
			analyses[key] = kc
		}
		if kc.err != nil {
			return false, hlo.At(in, fmt.Errorf("kernel %s: %w", in.Name, kc.err))
		}
		site.Key, site.Info = key, kc.info
		if idx, ok := tileIdx[key]; ok {
			site.Choice = s.Space.Tile[idx].planned[s.Space.Tile[idx].Chosen]
			s.Space.Tile[idx].Kernels = append(s.Space.Tile[idx].Kernels, in.Name)
		} else {
			choice := kc.defTile
			if want, fromConfig, ok := s.want(KindTile, key, key); ok {
				idx := slices.IndexFunc(kc.tiles, func(x cost.Tile) bool { return x.Equal(want.Tile) })
				switch {
				case idx >= 0:
					choice = idx
				case fromConfig && s.Options.Strict:
					return false, fmt.Errorf("kernel %s (key %s): tile %s is not a valid option (%d valid, e.g. %s)",
						in.Name, key, want.Tile, len(kc.tiles), kc.tiles[kc.defTile])
				}
			}
			tileIdx[key] = len(s.Space.Tile)
			s.Space.Tile = append(s.Space.Tile, TileChoice{Key: key, Kernels: []string{in.Name}, Options: kc.tiles, Default: kc.defTile, Chosen: choice, planned: kc.opts})
			site.Choice = kc.opts[choice]
			s.Effective.Tile[key] = slices.Clone(kc.tiles[choice])
			if choice != kc.defTile {
				changed = true
			}
		}
		setExtra(in, "tile", tileAttr(s.Effective.Tile[key]))
	}
	return changed, nil
}

// DefaultFlagsFor is the compiler's default flags for a kernel with the tile of p (p's own
// flags do not matter): double buffering with two buffers and no unrolling, except for a
// single-step kernel (nothing to overlap: one buffer), and the first valid combination
// when the default does not fit.
func DefaultFlagsFor(p cost.Planned) cost.Flags {
	want := cost.DefaultFlags()
	if p.Plan.Steps == 1 {
		want = cost.Flags{Unroll: 1, PipelineDepth: 1}
	}
	opts := p.FlagOptions()
	if slices.Contains(opts, want) || len(opts) == 0 {
		return want
	}
	if slices.Contains(opts, cost.DefaultFlags()) {
		return cost.DefaultFlags()
	}
	return opts[0]
}

// runFlags is the flags pass: each kernel takes code-generation flags valid with its tile:
// the config's entry for its key, else the store's, else the default (DefaultFlagsFor:
// double buffering, two buffers, no unrolling; a single buffer for single-step kernels)
// or, when that does not fit, the first valid combination. It completes every
// KernelSite's Choice (ProductFlags). The flags are recorded on the fusion instruction as
// codegen_flags="...".
func runFlags(m *hlo.Module, s *State) (bool, error) {
	changed := false
	flagsIdx := map[string]int{} // key -> index in s.Space.Flags
	for _, site := range s.Kernels {
		in, key := site.Fusion, site.Key
		if idx, ok := flagsIdx[key]; ok {
			s.Space.Flags[idx].Kernels = append(s.Space.Flags[idx].Kernels, in.Name)
		} else {
			tile := site.Choice.Config.Tile
			opts := site.Choice.FlagOptions()
			if len(opts) == 0 {
				return false, hlo.At(in, fmt.Errorf("kernel %s: no flags fit tile %s in VMEM", in.Name, tile))
			}
			def := max(slices.Index(opts, DefaultFlagsFor(site.Choice)), 0)
			choice := def
			if want, fromConfig, ok := s.want(KindFlags, key, key); ok {
				idx := slices.Index(opts, want.Flags)
				switch {
				case idx >= 0:
					choice = idx
				case fromConfig && s.Options.Strict:
					return false, fmt.Errorf("kernel %s (key %s): flags %s are not valid with tile %s", in.Name, key, want.Flags, tile)
				}
			}
			flagsIdx[key] = len(s.Space.Flags)
			s.Space.Flags = append(s.Space.Flags, FlagsChoice{Key: key, Kernels: []string{in.Name}, Options: opts, Default: def, Chosen: choice})
			s.Effective.Flags[key] = opts[choice]
			if choice != def {
				changed = true
			}
		}
		f := s.Effective.Flags[key]
		var err error
		if site.Choice, err = site.Choice.WithFlags(f); err != nil {
			return false, hlo.At(in, fmt.Errorf("kernel %s: %w", in.Name, err))
		}
		setExtra(in, "codegen_flags", fmt.Sprintf("\"double_buffer=%t,unroll=%d,pipeline_depth=%d\"", f.DoubleBuffer, f.Unroll, f.PipelineDepth))
	}
	return changed, nil
}
