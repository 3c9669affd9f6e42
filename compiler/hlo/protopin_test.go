package hlo

import (
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"github.com/tpucost/tpucost/internal/pbwire"
)

// TestDecodeProtoPinned pins the binary importer on the real HloModuleProtos of the test
// data (TpuGraphs' 15 op-tuning modules and its layout-tuning module): the digests of the
// decoded modules' text were recorded from the importer that rendered a proto as HLO text
// and parsed it, before the importer built the IR directly (the two were compared equal,
// instruction for instruction, on every proto of the test data and under a differential
// fuzz of the two).
func TestDecodeProtoPinned(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"testdata/tpugraphs/op_tuning_data.pb", "8a2a8f617cf13c2f532882f4a703127a06e323f4e8f98f928720130d81fd9a4a"},
		{"testdata/tpugraphs/module_tuning_data_layout.pb", "b514c7ec5efc6b41e3d7604e724265eb1fc07d5dff4836c72ef560afc6a626b4"},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		var records [][]byte // one module each
		if _, err := DecodeModuleProto(c.file, data); err == nil {
			records = [][]byte{data}
		} else {
			top, err := pbwire.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range top.All(1) {
				records = append(records, f.B)
			}
		}
		h := sha256.New()
		for _, r := range records {
			m, err := DecodeModuleProto(c.file, r)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(m); err != nil {
				t.Errorf("%s: %s does not verify: %v", c.file, m.Name, err)
			}
			h.Write([]byte(m.String()))
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != c.want {
			t.Errorf("%s: %d modules, digest %s, want %s", c.file, len(records), got, c.want)
		}
	}
}
