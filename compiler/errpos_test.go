package compiler

import (
	"os"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/compiler/hlo"
)

// TestErrorsNameFile: errors found after import — by the partitioner, the collective
// reader of the schedule, the module-level partition count — name the file and the
// line:col of the sharding or instruction they are about (else the module's header), on
// one line. The modules are real XLA files of hlo/testdata/real_more with one attribute
// changed to an invalid value.
func TestErrorsNameFile(t *testing.T) {
	const sharded = "hlo/testdata/real_more/sharded_no_num_partitions.hlo"
	const mesh = "hlo/testdata/real_more/mesh_all_reduce.hlo"
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	src := read(sharded)
	// Line 120's sharding names 4 devices where the module's others name 2.
	line120 := "reshape.105 = f16[32,512,3,12,64]{4,3,2,1,0} reshape(add.103), sharding={devices=[2,1,1,1,1]<=[2]}"
	if !strings.Contains(src, line120) {
		t.Fatalf("%s changed: no %q", sharded, line120)
	}
	badShard := strings.Replace(src, line120, strings.Replace(line120, "[2,1,1,1,1]<=[2]", "[4,1,1,1,1]<=[4]", 1), 1)
	meshSrc := read(mesh)
	badMesh := strings.Replace(meshSrc, "replica_groups=mesh['axis_0'=2,'axis_1'=2]", "replica_groups=mesh['axis_0'=2,'axis_1'=2], device_ids=(3,2,1)", 1)
	for _, c := range []struct {
		name, file, src string
		opts            Options
		prefix, has     string
	}{
		{"partitioner: a sharding", "sharded.hlo", badShard, opts(), "sharded.hlo:120:", "names 4 devices"},
		{"partitioner: the module's count", "sharded.hlo", src, Options{Target: testTarget, Partitions: 3}, "sharded.hlo:1:1: ", "--partitions 3"},
		{"schedule: replica groups", "mesh.hlo", badMesh, opts(), "mesh.hlo:26:8: ", "expected 4 device_ids (the mesh's size), found 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := hlo.Parse(c.file, []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			c.opts.Check = true
			_, err = Compile(m, nil, c.opts)
			if err == nil || !strings.HasPrefix(err.Error(), c.prefix) || !strings.Contains(err.Error(), c.has) ||
				strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %v\nwant one line starting %q and containing %q", err, c.prefix, c.has)
			}
		})
	}
}
