package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimCollectiveChips: `sim` reports the chips a real module's replica groups span
// (llama3 1x8: groups of 8 devices, no replica_count in its header, once "over 1
// chip(s)"), refuses --chips that contradicts them, and counts and warns about the
// collectives nothing sizes (host_offload's replica_groups={}, once a silent zero).
func TestSimCollectiveChips(t *testing.T) {
	const real = "../../../compiler/hlo/testdata/real/"
	out, errs, code := run("sim", real+"llama3_8b_bf16_activation_offloading_1x8.hlo", "--json")
	var r struct {
		Chips   int  `json:"chips"`
		Unsized *int `json:"unsized_collectives"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Chips != 8 || r.Unsized == nil || *r.Unsized != 0 {
		t.Errorf("llama3 1x8: exit %d, chips %d, unsized %v (stderr %q); want 8 chips, 0 unsized", code, r.Chips, r.Unsized, errs)
	}
	if _, errs, code := run("sim", real+"llama3_8b_bf16_activation_offloading_1x8.hlo", "--chips", "2"); code == 0 || !strings.Contains(errs, "span 8 chips") {
		t.Errorf("llama3 1x8 --chips 2: exit %d, stderr %q; want the contradiction named", code, errs)
	}
	out, errs, code = run("sim", real+"host_offload.hlo", "--json")
	r.Unsized = nil
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Unsized == nil || *r.Unsized != 1 ||
		!strings.Contains(errs, "WARNING: 1 collective(s) name no replica group") {
		t.Errorf("host_offload: exit %d, unsized %v, stderr %q; want 1 unsized collective and a warning", code, r.Unsized, errs)
	}
	if _, errs, code = run("sim", real+"host_offload.hlo", "--chips", "4"); code != 0 || strings.Contains(errs, "WARNING") {
		t.Errorf("host_offload --chips 4: exit %d, stderr %q; want no warning", code, errs)
	}
}
