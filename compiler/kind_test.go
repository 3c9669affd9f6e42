package compiler

import (
	"reflect"
	"slices"
	"testing"

	"github.com/tpucost/tpucost/compiler/cost"
)

// TestKindRegistry: Kinds is the registry's (kinds) in pipeline order, every registered
// kind stores and returns its entries through Config.Set/Get/Names, and only tile and
// flags are relative (an unregistered name is not).
func TestKindRegistry(t *testing.T) {
	want := []Kind{KindLayout, KindFusion, KindTile, KindFlags, KindStaging}
	if !slices.Equal(Kinds(), want) {
		t.Fatalf("Kinds() = %v, want %v", Kinds(), want)
	}
	entry := map[Kind]Entry{
		KindLayout:  {Layout: []int{1, 0}},
		KindFusion:  {Fusion: true},
		KindTile:    {Tile: cost.Tile{8, 128}},
		KindFlags:   {Flags: cost.Flags{}},
		KindStaging: {Staging: true},
	}
	for _, k := range Kinds() {
		var c Config
		e, ok := entry[k]
		if !ok {
			t.Errorf("kind %s has no test entry: add one", k)
			continue
		}
		c.Set(k, "x", e)
		got, ok := c.Get(k, "x")
		if !ok || !reflect.DeepEqual(got, e) || !slices.Equal(c.Names(k), []string{"x"}) {
			t.Errorf("%s: Get = %+v, %v; Names = %v", k, got, ok, c.Names(k))
		}
		if rel := k == KindTile || k == KindFlags; k.Relative() != rel {
			t.Errorf("%s: Relative() = %v", k, k.Relative())
		}
	}
	if Kind("nope").Relative() {
		t.Error("an unregistered kind is relative")
	}
}
