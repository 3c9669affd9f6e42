package tune

import (
	"sort"
	"strings"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/compiler/hlo"
)

// originKernels maps the name of each instruction of the compiler's input module to the
// indices of the kernels of p whose fused computation holds a copy of it (the fusion pass
// names a member "NAME.ROOT", uniquified with a ".N" suffix when taken).
func originKernels(p *compiler.Program) map[string][]int {
	out := map[string][]int{}
	for i, k := range p.Kernels {
		suffix := "." + strings.TrimPrefix(k.Comp.Name, "fused_")
		for _, in := range k.Comp.Instructions {
			if in.Opcode == hlo.OpParameter {
				continue
			}
			o, ok := strings.CutSuffix(in.Name, suffix)
			if !ok {
				if j := strings.LastIndexByte(in.Name, '.'); j > 0 {
					o, ok = strings.CutSuffix(in.Name[:j], suffix)
				}
			}
			if ok && (len(out[o]) == 0 || out[o][len(out[o])-1] != i) {
				out[o] = append(out[o], i)
			}
		}
	}
	return out
}

// records lists what a run learned about the final program fin for the global store:
// every distinct kernel's tile and flags with its best known time, and every layout and
// fusion choice with the summed best known times of the kernels it shapes (for a layout
// node: the kernels holding the node, its users or its copies; for an edge: those
// holding its producer or consumer). Choices touching a kernel whose time is unknown
// are left out. mod is the compiler's input module (not modified).
func (r *run) records(mod *hlo.Module, fin *compiler.Program) []Record {
	var out []Record
	times := make([]float64, len(fin.Kernels))
	known := make([]bool, len(fin.Kernels))
	seen := map[string]bool{}
	for i, k := range fin.Kernels {
		times[i], known[i] = r.kernTime[k.Choice.ID()]
		if known[i] && !seen[k.Key] {
			seen[k.Key] = true
			out = append(out, Record{Kind: compiler.KindTile, Key: k.Key, Entry: compiler.Entry{Tile: k.Choice.Config.Tile, Flags: k.Choice.Config.Flags}, Ns: times[i], Program: fin.Name})
		}
	}
	origin := originKernels(fin)
	names := make([]string, 0, len(origin))
	for n := range origin {
		names = append(names, n)
	}
	sort.Strings(names)
	local := func(nodes []string, copiesOf string) (float64, bool) {
		set := map[int]bool{}
		for _, n := range nodes {
			for _, i := range origin[n] {
				set[i] = true
			}
		}
		if copiesOf != "" {
			prefix := copiesOf + ".copy"
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					for _, i := range origin[n] {
						set[i] = true
					}
				}
			}
		}
		if len(set) == 0 {
			return 0, false
		}
		// Summed in kernel order: a float sum in map order would differ between runs.
		idx := make([]int, 0, len(set))
		for i := range set {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		sum := 0.0
		for _, i := range idx {
			if !known[i] {
				return 0, false
			}
			sum += times[i]
		}
		return sum, true
	}
	users := map[string][]string{}
	e := mod.Clone().Entry // Users renumbers: work on a copy
	for i, us := range e.Users() {
		for _, u := range us {
			users[e.Instructions[i].Name] = append(users[e.Instructions[i].Name], u.Name)
		}
	}
	for _, c := range fin.Space.Layout {
		if ns, ok := local(append([]string{c.Name}, users[c.Name]...), c.Name); ok {
			out = append(out, Record{Kind: compiler.KindLayout, Key: c.Key, Entry: compiler.Entry{Layout: c.Options[c.Chosen]}, Ns: ns, Program: fin.Name})
		}
	}
	for _, c := range fin.Space.Fusion {
		prod, cons, ok := strings.Cut(c.Name, "->")
		if !ok {
			continue
		}
		if ns, ok := local([]string{prod, cons}, ""); ok {
			out = append(out, Record{Kind: compiler.KindFusion, Key: c.Key, Entry: compiler.Entry{Fusion: c.Chosen}, Ns: ns, Program: fin.Name})
		}
	}
	return dedupeRecords(out)
}

// dedupeRecords keeps, per (kind, key), the record with the lowest time (the first among
// equals): one program can hold several nodes with the same structural key.
func dedupeRecords(recs []Record) []Record {
	idx := map[string]int{}
	var out []Record
	for _, rec := range recs {
		id := string(rec.Kind) + "|" + rec.Key
		if i, ok := idx[id]; ok {
			if rec.Ns < out[i].Ns {
				out[i] = rec
			}
			continue
		}
		idx[id] = len(out)
		out = append(out, rec)
	}
	return out
}
