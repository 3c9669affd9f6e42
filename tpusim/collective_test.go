package tpusim

import (
	"strings"
	"testing"
)

// TestCollectiveGroupRule: the replica groups written in an instruction define its group
// (`sim` once printed "over 1 chip(s)" for groups spanning 16 devices, and ran an 8-chip
// ring while printing "over 2 chip(s)" under --chips 2); --chips sizes only collectives
// with empty groups, a contradiction is an error, and a collective nothing sizes is
// counted (unsized_collectives), never a silent zero.
func TestCollectiveGroupRule(t *testing.T) {
	c := preset(t, "v4")
	const body = `  p = f32[1024,1024] parameter(0)
  ROOT ar = f32[1024,1024] all-reduce(p), replica_groups=%s, to_apply=add
}
`
	const add = "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\n"
	cases := []struct {
		name      string
		header    string
		groups    string
		chips     int
		wantErr   string
		wantK     int // group size of the all-reduce
		wantChips int // Report.Chips
		unsized   int
	}{
		{"groups span 16 devices, no header", "", "{{0,1,2,3,4,5,6,7},{8,9,10,11,12,13,14,15}}", 0, "", 8, 16, 0},
		{"iota groups span 16", "", "[2,8]<=[16]", 0, "", 8, 16, 0},
		{"groups of 8 under --chips 2", "", "{{0,1,2,3,4,5,6,7}}", 2, "span 8 chips, more than the 2 chips asked for (--chips)", 0, 0, 0},
		{"groups of 2 under --chips 8", "", "{{0,1},{2,3},{4,5},{6,7}}", 8, "", 2, 8, 0},
		{"empty groups sized by --chips", "", "{}", 4, "", 4, 4, 0},
		{"empty groups sized by the header", ", replica_count=4", "{}", 0, "", 4, 4, 0},
		{"empty groups, nothing sizes them", "", "{}", 0, "", 1, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "HloModule m" + tc.header + "\n\n" + add + "ENTRY main {\n" + strings.Replace(body, "%s", tc.groups, 1)
			p := compileDefault(t, parseHLO(t, src), c, nil)
			r, err := SimulateWith(p, c, Options{Chips: tc.chips})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var k int
			for _, e := range r.Kernels {
				if e.ControlReport != nil && e.Collective != "" {
					k = e.GroupSize
				}
			}
			if k != tc.wantK || r.Chips != tc.wantChips || r.UnsizedCollectives != tc.unsized {
				t.Errorf("group %d, chips %d, unsized %d; want %d, %d, %d", k, r.Chips, r.UnsizedCollectives, tc.wantK, tc.wantChips, tc.unsized)
			}
		})
	}
}
