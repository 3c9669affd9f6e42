package dataset

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/tpucost/tpucost/features"
	"github.com/tpucost/tpucost/internal/jsonerr"
)

// Column names of a rows file, in schema order.
const (
	ColProgram        = "program"
	ColUnit           = "unit"
	ColTask           = "task"
	ColKernelKey      = "kernel_key"
	ColKernelName     = "kernel_name"
	ColKind           = "kind"
	ColNodeOpcodes    = "node_opcodes"
	ColNodeFeatures   = "node_features"
	ColEdgeSrc        = "edge_src"
	ColEdgeDst        = "edge_dst"
	ColKernelFeatures = "kernel_features"
	ColConfigs        = "configs"
	ColConfigFeatures = "config_features"
	ColRuntimeNs      = "runtime_ns"
	ColAnalyticalNs   = "analytical_ns"
	// ColConfigNodes is present only in datasets with per-node configs
	// (Provenance.PerNodeConfigs), after the columns above.
	ColConfigNodes = "config_nodes"
	// ColRuntimeNormalizers is present only in datasets whose runtimes come with
	// per-configuration normalizers (Provenance.RuntimeNormalizers: TpuGraphs' tile
	// collection), as the last column.
	ColRuntimeNormalizers = "runtime_normalizers"
)

// Column names of an occurrences file, in schema order.
const (
	ColOccUnit      = "unit"
	ColOccProgram   = "program"
	ColOccVariant   = "variant"
	ColOccKernelKey = "kernel_key"
	ColOccCount     = "count"
)

// Schema metadata keys. MetaProvenance holds the whole Provenance as JSON; the others are
// flat copies of single values for people and tools that do not parse JSON.
const (
	MetaProvenance         = "tpucost.provenance"
	MetaSchemaVersion      = "tpucost.schema_version"
	MetaFeatureVersion     = "tpucost.feature_version"
	MetaSimulator          = "tpucost.simulator"
	MetaChip               = "tpucost.chip"
	MetaTask               = "tpucost.task"
	MetaSeed               = "tpucost.seed"
	MetaNodeFeatureWidth   = "tpucost.node_feature_width"
	MetaKernelFeatureWidth = "tpucost.kernel_feature_width"
	MetaConfigFeatureWidth = "tpucost.config_feature_width"
	MetaUnitFirst          = "tpucost.unit_first"
	MetaUnitLast           = "tpucost.unit_last"
	MetaPart               = "tpucost.part"
	MetaShard              = "tpucost.shard"   // "<index>of<count>"
	MetaContent            = "tpucost.content" // "rows" or "occurrences"
	// MetaFeatureSet is Provenance.FeatureSet; present only when that is set.
	MetaFeatureSet = "tpucost.feature_set"
)

// Values of MetaContent.
const (
	contentRows        = "rows"
	contentOccurrences = "occurrences"
)

// Widths returns the node, kernel and config feature widths of p's feature schema (the
// lengths of its name lists), falling back to the features package's current widths for
// a list that is empty, unless p names a feature set of its own (FeatureSet), whose
// lists are taken as they are (an empty one is width 0). With PerNodeConfigs, config is
// the width per configurable node.
func (p Provenance) Widths() (node, kernel, config int) {
	w := [3]int{len(p.FeatureSchema.Node), len(p.FeatureSchema.Kernel), len(p.FeatureSchema.Config)}
	if p.FeatureSet != "" {
		return w[0], w[1], w[2]
	}
	current := [3]int{features.NodeWidth, features.KernelWidth, features.ConfigWidth}
	for i := range w {
		switch {
		case w[i] > 0:
		case p.widths[i] > 0:
			w[i] = p.widths[i] // read from the file's metadata
		default:
			w[i] = current[i]
		}
	}
	return w[0], w[1], w[2]
}

// Diff returns the JSON name of the first Provenance field in which p and q differ,
// ignoring ShardIndex (shards of one dataset differ only there), or "" if they agree.
func (p Provenance) Diff(q Provenance) string {
	pv, qv := reflect.ValueOf(p), reflect.ValueOf(q)
	t := pv.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "ShardIndex" || !f.IsExported() {
			continue
		}
		if !reflect.DeepEqual(pv.Field(i).Interface(), qv.Field(i).Interface()) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			return name
		}
	}
	return ""
}

// fileMeta is what a file's schema metadata says about it.
type fileMeta struct {
	Prov      Provenance
	Content   string
	UnitFirst int64
	UnitLast  int64
	Part      int
}

// metadata returns the schema metadata of a file, keys in a fixed order so that files
// are byte-identical for identical inputs.
func (m fileMeta) metadata() (arrow.Metadata, error) {
	pj, err := json.Marshal(m.Prov)
	if err != nil {
		return arrow.Metadata{}, fmt.Errorf("encoding provenance: %w", err)
	}
	node, kernel, config := m.Prov.Widths()
	kv := [][2]string{
		{MetaSchemaVersion, strconv.Itoa(m.Prov.SchemaVersion)},
		{MetaFeatureVersion, strconv.Itoa(m.Prov.FeatureSchema.Version)},
		{MetaSimulator, m.Prov.SimulatorVersion},
		{MetaChip, m.Prov.Chip},
		{MetaTask, string(m.Prov.Task)},
		{MetaSeed, strconv.FormatInt(m.Prov.Seed, 10)},
		{MetaNodeFeatureWidth, strconv.Itoa(node)},
		{MetaKernelFeatureWidth, strconv.Itoa(kernel)},
		{MetaConfigFeatureWidth, strconv.Itoa(config)},
		{MetaUnitFirst, strconv.FormatInt(m.UnitFirst, 10)},
		{MetaUnitLast, strconv.FormatInt(m.UnitLast, 10)},
		{MetaPart, strconv.Itoa(m.Part)},
		{MetaShard, fmt.Sprintf("%dof%d", m.Prov.ShardIndex, m.Prov.ShardCount)},
		{MetaContent, m.Content},
	}
	if m.Prov.FeatureSet != "" {
		kv = append(kv, [2]string{MetaFeatureSet, m.Prov.FeatureSet})
	}
	kv = append(kv, [2]string{MetaProvenance, string(pj)})
	keys, vals := make([]string, len(kv)), make([]string, len(kv))
	for i, p := range kv {
		keys[i], vals[i] = p[0], p[1]
	}
	return arrow.NewMetadata(keys, vals), nil
}

// parseFileMeta reads the tpucost keys of a file's metadata (given as a lookup function,
// so that Arrow schema metadata and Parquet key-value metadata share it).
func parseFileMeta(get func(key string) (string, bool)) (fileMeta, error) {
	var m fileMeta
	pj, ok := get(MetaProvenance)
	if !ok {
		return m, fmt.Errorf("no %s metadata: not a tpucost dataset file", MetaProvenance)
	}
	if err := jsonerr.Unmarshal(MetaProvenance+" metadata", []byte(pj), &m.Prov); err != nil {
		return m, err
	}
	m.Content, _ = get(MetaContent)
	var err error
	num := func(key string) int64 {
		s, ok := get(key)
		if !ok {
			if err == nil {
				err = fmt.Errorf("no %s metadata", key)
			}
			return 0
		}
		v, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("bad %s metadata %q", key, s)
		}
		return v
	}
	m.UnitFirst, m.UnitLast, m.Part = num(MetaUnitFirst), num(MetaUnitLast), int(num(MetaPart))
	if err != nil {
		return m, err
	}
	// A feature schema without names (a minimal or older file) takes its widths from the
	// flat keys; otherwise the flat keys repeat provenance fields, and disagreement means
	// a damaged file.
	for i, key := range []string{MetaNodeFeatureWidth, MetaKernelFeatureWidth, MetaConfigFeatureWidth} {
		if v, ok := get(key); ok {
			if n, perr := strconv.Atoi(v); perr == nil && n > 0 {
				m.Prov.widths[i] = n
			}
		}
	}
	node, kernel, config := m.Prov.Widths()
	for key, want := range map[string]string{
		MetaSchemaVersion: strconv.Itoa(m.Prov.SchemaVersion), MetaFeatureVersion: strconv.Itoa(m.Prov.FeatureSchema.Version),
		MetaSimulator: m.Prov.SimulatorVersion, MetaChip: m.Prov.Chip, MetaTask: string(m.Prov.Task),
		MetaSeed: strconv.FormatInt(m.Prov.Seed, 10), MetaNodeFeatureWidth: strconv.Itoa(node),
		MetaKernelFeatureWidth: strconv.Itoa(kernel), MetaConfigFeatureWidth: strconv.Itoa(config),
		MetaShard:      fmt.Sprintf("%dof%d", m.Prov.ShardIndex, m.Prov.ShardCount),
		MetaFeatureSet: m.Prov.FeatureSet,
	} {
		if key == MetaFeatureSet && want == "" {
			if got, ok := get(key); ok {
				return m, fmt.Errorf("metadata %s is %q, the provenance names no feature set", key, got)
			}
			continue
		}
		if got, _ := get(key); got != want {
			return m, fmt.Errorf("metadata %s is %q, the provenance says %q", key, got, want)
		}
	}
	if m.UnitFirst > m.UnitLast {
		return m, fmt.Errorf("metadata unit range [%d, %d] is empty", m.UnitFirst, m.UnitLast)
	}
	return m, nil
}

// rowColumns says which optional columns a rows file has.
type rowColumns struct {
	perNode     bool // ColConfigNodes
	normalizers bool // ColRuntimeNormalizers
}

// columnsOf is the optional columns of a dataset with provenance p.
func columnsOf(p Provenance) rowColumns {
	return rowColumns{perNode: p.PerNodeConfigs, normalizers: p.RuntimeNormalizers}
}

// columnsIn is the optional columns a schema holds (by name, after the base columns).
func columnsIn(s *arrow.Schema) rowColumns {
	var c rowColumns
	for i := len(baseRowsFields()); i < s.NumFields(); i++ {
		switch s.Field(i).Name {
		case ColConfigNodes:
			c.perNode = true
		case ColRuntimeNormalizers:
			c.normalizers = true
		}
	}
	return c
}

// rowsFields are the columns of a rows file: the base columns, then ColConfigNodes and
// ColRuntimeNormalizers when c has them. Every column and list item is non-nullable.
func rowsFields(c rowColumns) []arrow.Field {
	f := baseRowsFields()
	if c.perNode {
		f = append(f, arrow.Field{Name: ColConfigNodes, Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)})
	}
	if c.normalizers {
		f = append(f, arrow.Field{Name: ColRuntimeNormalizers, Type: arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)})
	}
	return f
}

func baseRowsFields() []arrow.Field {
	str, i64 := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64
	li32 := arrow.ListOfNonNullable(arrow.PrimitiveTypes.Int32)
	lf32 := arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float32)
	lf64 := arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)
	return []arrow.Field{
		{Name: ColProgram, Type: str},
		{Name: ColUnit, Type: i64},
		{Name: ColTask, Type: str},
		{Name: ColKernelKey, Type: str},
		{Name: ColKernelName, Type: str},
		{Name: ColKind, Type: str},
		{Name: ColNodeOpcodes, Type: li32},
		{Name: ColNodeFeatures, Type: lf32},
		{Name: ColEdgeSrc, Type: li32},
		{Name: ColEdgeDst, Type: li32},
		{Name: ColKernelFeatures, Type: lf32},
		{Name: ColConfigs, Type: arrow.ListOfNonNullable(str)},
		{Name: ColConfigFeatures, Type: arrow.ListOfNonNullable(lf32)},
		{Name: ColRuntimeNs, Type: lf64},
		{Name: ColAnalyticalNs, Type: lf64},
	}
}

// occFields are the columns of an occurrences file.
func occFields() []arrow.Field {
	return []arrow.Field{
		{Name: ColOccUnit, Type: arrow.PrimitiveTypes.Int64},
		{Name: ColOccProgram, Type: arrow.BinaryTypes.String},
		{Name: ColOccVariant, Type: arrow.PrimitiveTypes.Int32},
		{Name: ColOccKernelKey, Type: arrow.BinaryTypes.String},
		{Name: ColOccCount, Type: arrow.PrimitiveTypes.Int32},
	}
}

// RowsSchema returns the Arrow schema of a rows file without metadata (for documentation
// and tools; files carry the metadata described by the Meta constants).
func RowsSchema() *arrow.Schema { return arrow.NewSchema(rowsFields(rowColumns{}), nil) }

// OccurrencesSchema returns the Arrow schema of an occurrences file without metadata.
func OccurrencesSchema() *arrow.Schema { return arrow.NewSchema(occFields(), nil) }

// sameShape reports whether two types have the same structure (type ids, recursively
// through lists), ignoring field names and nullability, which Parquet round trips change.
func sameShape(a, b arrow.DataType) bool {
	if a.ID() != b.ID() {
		return false
	}
	if la, ok := a.(*arrow.ListType); ok {
		return sameShape(la.Elem(), b.(*arrow.ListType).Elem())
	}
	return true
}

// checkFields checks that schema has exactly the wanted columns, in order, with the
// wanted types.
func checkFields(schema *arrow.Schema, want []arrow.Field) error {
	if schema.NumFields() != len(want) {
		return fmt.Errorf("schema has %d columns, want %d", schema.NumFields(), len(want))
	}
	for i, w := range want {
		f := schema.Field(i)
		if f.Name != w.Name {
			return fmt.Errorf("column %d is %q, want %q", i, f.Name, w.Name)
		}
		if !sameShape(f.Type, w.Type) {
			return fmt.Errorf("column %q has type %s, want %s", f.Name, f.Type, w.Type)
		}
	}
	return nil
}

// checkRow checks that r is a consistent row for a dataset with the given widths.
func checkRow(r *Row, node, kernel, config int) error {
	g := &r.Graph
	n := len(g.Opcodes)
	switch {
	case r.KernelKey == "":
		return fmt.Errorf("empty kernel key")
	case len(g.NodeFeats) != n*node:
		return fmt.Errorf("%d node features for %d nodes of width %d", len(g.NodeFeats), n, node)
	case len(g.KernelFeats) != kernel:
		return fmt.Errorf("%d kernel features, want %d", len(g.KernelFeats), kernel)
	case len(g.EdgeSrc) != len(g.EdgeDst):
		return fmt.Errorf("%d edge sources and %d destinations", len(g.EdgeSrc), len(g.EdgeDst))
	case len(r.ConfigFeats) != len(r.Configs) || len(r.RuntimesNs) != len(r.Configs) || len(r.AnalyticalNs) != len(r.Configs):
		return fmt.Errorf("%d configs, %d config feature vectors, %d runtimes, %d analytical estimates",
			len(r.Configs), len(r.ConfigFeats), len(r.RuntimesNs), len(r.AnalyticalNs))
	}
	if len(r.ConfigNodes) > 0 {
		for _, v := range r.ConfigNodes {
			if v < 0 || int(v) >= n {
				return fmt.Errorf("configurable node %d out of range for %d nodes", v, n)
			}
		}
		config *= len(r.ConfigNodes)
	}
	if len(r.Normalizers) > 0 {
		if len(r.Normalizers) != len(r.Configs) {
			return fmt.Errorf("%d runtime normalizers for %d configs", len(r.Normalizers), len(r.Configs))
		}
		for i, v := range r.Normalizers {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("config %d has runtime normalizer %v, want a positive finite number", i, v)
			}
		}
	}
	for j := range g.EdgeSrc {
		if s, d := g.EdgeSrc[j], g.EdgeDst[j]; s < 0 || int(s) >= n || d < 0 || int(d) >= n {
			return fmt.Errorf("edge %d (%d->%d) out of range for %d nodes", j, s, d, n)
		}
	}
	for i, f := range r.ConfigFeats {
		if len(f) != config {
			return fmt.Errorf("config %d has %d features, want %d", i, len(f), config)
		}
	}
	return nil
}

// rowBytes estimates the uncompressed Arrow size of r (values and offsets).
func rowBytes(r *Row) int {
	b := len(r.Program) + len(r.Task) + len(r.KernelKey) + len(r.KernelName) + len(r.Kind) + 8 + 5*4
	g := &r.Graph
	b += 4*(len(g.Opcodes)+len(g.NodeFeats)+len(g.EdgeSrc)+len(g.EdgeDst)+len(g.KernelFeats)) + 6*4
	for i := range r.Configs {
		b += len(r.Configs[i]) + 4 + 4*len(r.ConfigFeats[i]) + 4 + 16
	}
	if len(r.ConfigNodes) > 0 {
		b += 4*len(r.ConfigNodes) + 4
	}
	if len(r.Normalizers) > 0 {
		b += 8*len(r.Normalizers) + 4
	}
	return b
}

// SizeBytes estimates the uncompressed size of r in a rows file, so that a caller can
// bound the size of the parts it writes.
func (r *Row) SizeBytes() int64 { return int64(rowBytes(r)) }

// Clone returns a deep copy of r that shares no memory with it.
func (r *Row) Clone() Row {
	c := *r
	c.Graph = features.Graph{
		Opcodes:     cloneSlice(r.Graph.Opcodes),
		NodeFeats:   cloneSlice(r.Graph.NodeFeats),
		EdgeSrc:     cloneSlice(r.Graph.EdgeSrc),
		EdgeDst:     cloneSlice(r.Graph.EdgeDst),
		KernelFeats: cloneSlice(r.Graph.KernelFeats),
	}
	c.Configs = cloneSlice(r.Configs)
	if r.ConfigFeats != nil {
		c.ConfigFeats = make([][]float32, len(r.ConfigFeats))
		for i, f := range r.ConfigFeats {
			c.ConfigFeats[i] = cloneSlice(f)
		}
	}
	c.RuntimesNs = cloneSlice(r.RuntimesNs)
	c.AnalyticalNs = cloneSlice(r.AnalyticalNs)
	c.ConfigNodes = cloneSlice(r.ConfigNodes)
	c.Normalizers = cloneSlice(r.Normalizers)
	return c
}

// cloneSlice copies s, keeping nil as nil.
func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// buildRows converts rows into one record batch of schema (which must have rowsFields;
// with ColConfigNodes, the rows' ConfigNodes fill it, with ColRuntimeNormalizers their
// Normalizers).
// The caller releases the result.
func buildRows(mem memory.Allocator, schema *arrow.Schema, rows []Row) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Reserve(len(rows))
	str := func(i int) *array.StringBuilder { return b.Field(i).(*array.StringBuilder) }
	list := func(i int) *array.ListBuilder { return b.Field(i).(*array.ListBuilder) }
	program, task, key, name, kind := str(0), str(2), str(3), str(4), str(5)
	unit := b.Field(1).(*array.Int64Builder)
	opcodes, nodeFeats, edgeSrc, edgeDst, kernelFeats := list(6), list(7), list(8), list(9), list(10)
	configs, configFeats, runtimes, analytical := list(11), list(12), list(13), list(14)
	i32 := func(l *array.ListBuilder, v []int32) {
		l.Append(true)
		l.ValueBuilder().(*array.Int32Builder).AppendValues(v, nil)
	}
	f32 := func(l *array.ListBuilder, v []float32) {
		l.Append(true)
		l.ValueBuilder().(*array.Float32Builder).AppendValues(v, nil)
	}
	f64 := func(l *array.ListBuilder, v []float64) {
		l.Append(true)
		l.ValueBuilder().(*array.Float64Builder).AppendValues(v, nil)
	}
	cfgFeatInner := configFeats.ValueBuilder().(*array.ListBuilder)
	var perNode, normalizers *array.ListBuilder
	opt := columnsIn(schema)
	next := len(baseRowsFields())
	if opt.perNode {
		perNode = list(next)
		next++
	}
	if opt.normalizers {
		normalizers = list(next)
	}
	// Reserve every value buffer once: growing them append by append dominated the cost
	// of writing a part.
	var nOps, nNode, nEdge, nKern, nCfg, nCfgFeat, nCfgStr int
	for i := range rows {
		r := &rows[i]
		nOps += len(r.Graph.Opcodes)
		nNode += len(r.Graph.NodeFeats)
		nEdge += len(r.Graph.EdgeSrc)
		nKern += len(r.Graph.KernelFeats)
		nCfg += len(r.Configs)
		for j, c := range r.Configs {
			nCfgStr += len(c)
			nCfgFeat += len(r.ConfigFeats[j])
		}
	}
	opcodes.ValueBuilder().Reserve(nOps)
	nodeFeats.ValueBuilder().Reserve(nNode)
	edgeSrc.ValueBuilder().Reserve(nEdge)
	edgeDst.ValueBuilder().Reserve(nEdge)
	kernelFeats.ValueBuilder().Reserve(nKern)
	cs := configs.ValueBuilder().(*array.StringBuilder)
	cs.Reserve(nCfg)
	cs.ReserveData(nCfgStr)
	cfgFeatInner.Reserve(nCfg)
	cfgFeatInner.ValueBuilder().Reserve(nCfgFeat)
	runtimes.ValueBuilder().Reserve(nCfg)
	analytical.ValueBuilder().Reserve(nCfg)
	for i := range rows {
		r := &rows[i]
		program.Append(r.Program)
		unit.Append(r.Unit)
		task.Append(string(r.Task))
		key.Append(r.KernelKey)
		name.Append(r.KernelName)
		kind.Append(r.Kind)
		i32(opcodes, r.Graph.Opcodes)
		f32(nodeFeats, r.Graph.NodeFeats)
		i32(edgeSrc, r.Graph.EdgeSrc)
		i32(edgeDst, r.Graph.EdgeDst)
		f32(kernelFeats, r.Graph.KernelFeats)
		configs.Append(true)
		configs.ValueBuilder().(*array.StringBuilder).AppendValues(r.Configs, nil)
		configFeats.Append(true)
		for _, f := range r.ConfigFeats {
			f32(cfgFeatInner, f)
		}
		f64(runtimes, r.RuntimesNs)
		f64(analytical, r.AnalyticalNs)
		if perNode != nil {
			i32(perNode, r.ConfigNodes)
		}
		if normalizers != nil {
			f64(normalizers, r.Normalizers)
		}
	}
	return b.NewRecordBatch()
}

// buildOcc converts occurrences into one record batch of schema (occFields).
func buildOcc(mem memory.Allocator, schema *arrow.Schema, occ []Occurrence) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	b.Reserve(len(occ))
	unit := b.Field(0).(*array.Int64Builder)
	program := b.Field(1).(*array.StringBuilder)
	variant := b.Field(2).(*array.Int32Builder)
	key := b.Field(3).(*array.StringBuilder)
	count := b.Field(4).(*array.Int32Builder)
	for _, o := range occ {
		unit.Append(o.Unit)
		program.Append(o.Program)
		variant.Append(o.Variant)
		key.Append(o.KernelKey)
		count.Append(o.Count)
	}
	return b.NewRecordBatch()
}

// rowsBatch gives typed access to the columns of a rows record batch. Its accessors
// assume the batch passed checkBatch (columns, valid buffers, no nulls).
type rowsBatch struct {
	n                                           int
	program, task, key, name, kind              *array.String
	unit                                        *array.Int64
	opcodes, nodeFeats, edgeSrc, edgeDst, kFeat *array.List
	configs, configFeats, runtimes, analytical  *array.List
	cfgFeatInner                                *array.List
	cfgStrings                                  *array.String
	configNodes                                 *array.List // nil without ColConfigNodes
	normalizers                                 *array.List // nil without ColRuntimeNormalizers
}

// newRowsBatch wraps rec, a batch that passed checkBatch (with or without the optional
// columns; openBatchFile checked which against the provenance).
func newRowsBatch(rec arrow.RecordBatch) (*rowsBatch, error) {
	opt := columnsIn(rec.Schema())
	if err := checkFields(rec.Schema(), rowsFields(opt)); err != nil {
		return nil, err
	}
	col := func(i int) arrow.Array { return rec.Column(i) }
	b := &rowsBatch{
		n:       int(rec.NumRows()),
		program: col(0).(*array.String), unit: col(1).(*array.Int64), task: col(2).(*array.String),
		key: col(3).(*array.String), name: col(4).(*array.String), kind: col(5).(*array.String),
		opcodes: col(6).(*array.List), nodeFeats: col(7).(*array.List), edgeSrc: col(8).(*array.List),
		edgeDst: col(9).(*array.List), kFeat: col(10).(*array.List), configs: col(11).(*array.List),
		configFeats: col(12).(*array.List), runtimes: col(13).(*array.List), analytical: col(14).(*array.List),
	}
	b.cfgFeatInner = b.configFeats.ListValues().(*array.List)
	b.cfgStrings = b.configs.ListValues().(*array.String)
	next := len(baseRowsFields())
	if opt.perNode {
		b.configNodes = col(next).(*array.List)
		next++
	}
	if opt.normalizers {
		b.normalizers = col(next).(*array.List)
	}
	return b, nil
}

func int32sAt(l *array.List, i int, dst []int32) []int32 {
	s, e := l.ValueOffsets(i)
	return append(dst[:0], l.ListValues().(*array.Int32).Int32Values()[s:e]...)
}

func float32sAt(l *array.List, i int, dst []float32) []float32 {
	s, e := l.ValueOffsets(i)
	return append(dst[:0], l.ListValues().(*array.Float32).Float32Values()[s:e]...)
}

func float64sAt(l *array.List, i int, dst []float64) []float64 {
	s, e := l.ValueOffsets(i)
	return append(dst[:0], l.ListValues().(*array.Float64).Float64Values()[s:e]...)
}

// interner returns one shared copy of each distinct string it is given, so that the
// repeated program, task and kind values of a stream do not allocate per row.
type interner map[string]string

func (in interner) get(s string) string {
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) > 4096 {
		clear(in)
	}
	v := strings.Clone(s)
	in[v] = v
	return v
}

// rowBuf holds the reusable storage behind a streamed Row.
type rowBuf struct {
	flatCfg []float32
}

// fill sets r to row i of b, reusing r's slices and buf. Strings are copies (the caller
// may keep them); slices are overwritten by the next fill.
func (b *rowsBatch) fill(i int, r *Row, buf *rowBuf, in interner) {
	r.Program = in.get(b.program.Value(i))
	r.Unit = b.unit.Value(i)
	r.Task = Task(in.get(b.task.Value(i)))
	r.KernelKey = strings.Clone(b.key.Value(i))
	r.KernelName = strings.Clone(b.name.Value(i))
	r.Kind = in.get(b.kind.Value(i))
	g := &r.Graph
	g.Opcodes = int32sAt(b.opcodes, i, g.Opcodes)
	g.NodeFeats = float32sAt(b.nodeFeats, i, g.NodeFeats)
	g.EdgeSrc = int32sAt(b.edgeSrc, i, g.EdgeSrc)
	g.EdgeDst = int32sAt(b.edgeDst, i, g.EdgeDst)
	g.KernelFeats = float32sAt(b.kFeat, i, g.KernelFeats)
	cs, ce := b.configs.ValueOffsets(i)
	r.Configs = r.Configs[:0]
	for j := cs; j < ce; j++ {
		r.Configs = append(r.Configs, in.get(b.cfgStrings.Value(int(j))))
	}
	fs, fe := b.configFeats.ValueOffsets(i)
	r.ConfigFeats = r.ConfigFeats[:0]
	buf.flatCfg = buf.flatCfg[:0]
	vals := b.cfgFeatInner.ListValues().(*array.Float32).Float32Values()
	for j := fs; j < fe; j++ {
		s, e := b.cfgFeatInner.ValueOffsets(int(j))
		buf.flatCfg = append(buf.flatCfg, vals[s:e]...)
	}
	off := 0
	for j := fs; j < fe; j++ {
		s, e := b.cfgFeatInner.ValueOffsets(int(j))
		w := int(e - s)
		r.ConfigFeats = append(r.ConfigFeats, buf.flatCfg[off:off+w:off+w])
		off += w
	}
	r.RuntimesNs = float64sAt(b.runtimes, i, r.RuntimesNs)
	r.AnalyticalNs = float64sAt(b.analytical, i, r.AnalyticalNs)
	if b.configNodes != nil {
		r.ConfigNodes = int32sAt(b.configNodes, i, r.ConfigNodes)
	} else {
		r.ConfigNodes = r.ConfigNodes[:0]
	}
	if b.normalizers != nil {
		r.Normalizers = float64sAt(b.normalizers, i, r.Normalizers)
	} else {
		r.Normalizers = r.Normalizers[:0]
	}
}

// occBatch gives typed access to an occurrences record batch.
type occBatch struct {
	unit           *array.Int64
	program, key   *array.String
	variant, count *array.Int32
}

func newOccBatch(rec arrow.RecordBatch) (*occBatch, error) {
	if err := checkFields(rec.Schema(), occFields()); err != nil {
		return nil, err
	}
	return &occBatch{
		unit: rec.Column(0).(*array.Int64), program: rec.Column(1).(*array.String),
		variant: rec.Column(2).(*array.Int32), key: rec.Column(3).(*array.String), count: rec.Column(4).(*array.Int32),
	}, nil
}

func (b *occBatch) at(i int, in interner) Occurrence {
	return Occurrence{Unit: b.unit.Value(i), Program: in.get(b.program.Value(i)), Variant: b.variant.Value(i),
		KernelKey: strings.Clone(b.key.Value(i)), Count: b.count.Value(i)}
}
