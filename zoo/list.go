package zoo

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ListEntry is one model of a Listing (tpucost zoo list --json).
type ListEntry struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	Kind   string `json:"kind"`
	Nodes  int    `json:"nodes"`
	// Dynamic names the model's dynamic dimensions (["seq"]; --shapes seq=V sizes it),
	// DynamicMax their largest values; both absent for a static model.
	Dynamic    []string       `json:"dynamic,omitempty"`
	DynamicMax map[string]int `json:"dynamic_max,omitempty"`
}

// Listing lists zoo models (List).
type Listing []ListEntry

// List builds every zoo model of family (empty: all, in All's order) and lists it: name,
// family, kind, node count and dynamic dimensions. A family with no model is an error
// naming the families.
func List(family string) (Listing, error) {
	var out Listing
	for _, m := range All() {
		if family != "" && m.Family != family {
			continue
		}
		mod, err := m.Build()
		if err != nil {
			return nil, err
		}
		e := ListEntry{Name: m.Name, Family: m.Family, Kind: string(m.Kind), Nodes: mod.InstructionCount()}
		for _, d := range m.Dynamic {
			if e.DynamicMax == nil {
				e.DynamicMax = map[string]int{}
			}
			e.Dynamic = append(e.Dynamic, d.Name)
			e.DynamicMax[d.Name] = d.Max
		}
		out = append(out, e)
	}
	if family != "" && len(out) == 0 {
		return nil, fmt.Errorf("no family %q (families: %v)", family, Families())
	}
	return out, nil
}

// WriteText writes l as a table (tpucost zoo list), dynamic dimensions as NAME<=MAX.
func (l Listing) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tFAMILY\tKIND\tNODES\tDYNAMIC")
	for _, e := range l {
		dyn := "-"
		if len(e.Dynamic) > 0 {
			var ds []string
			for _, d := range e.Dynamic {
				ds = append(ds, fmt.Sprintf("%s<=%d", d, e.DynamicMax[d]))
			}
			dyn = strings.Join(ds, ",")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", e.Name, e.Family, e.Kind, e.Nodes, dyn)
	}
	return w.Flush()
}
