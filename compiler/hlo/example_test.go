package hlo_test

import (
	"fmt"
	"log"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// Parse HLO text (as XLA's --xla_dump_hlo_as_text writes it), walk the entry and print
// it back.
func ExampleParse() {
	src := `HloModule axpy

ENTRY main {
  a = f32[] parameter(0)
  x = f32[1024]{0} parameter(1)
  y = f32[1024]{0} parameter(2)
  ab = f32[1024]{0} broadcast(a), dimensions={}
  ax = f32[1024]{0} multiply(ab, x)
  ROOT r = f32[1024]{0} add(ax, y)
}
`
	m, err := hlo.Parse("axpy.hlo", []byte(src))
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range m.Entry.Instructions {
		fmt.Println(in.Name, in.Opcode, in.Shape, len(in.Operands))
	}
	again, err := hlo.Parse("printed", []byte(m.String()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("round trip equal:", hlo.ModulesEqual(m, again) == nil)
	// Output:
	// a parameter f32[] 0
	// x parameter f32[1024]{0} 0
	// y parameter f32[1024]{0} 0
	// ab broadcast f32[1024]{0} 1
	// ax multiply f32[1024]{0} 2
	// r add f32[1024]{0} 2
	// round trip equal: true
}
