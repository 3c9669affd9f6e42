package saved

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"testing"
)

type rec struct {
	Name string `json:"name"`
}

func (r *rec) WriteText(w io.Writer, dir string) error {
	_, err := fmt.Fprintf(w, "%s in %s\n", r.Name, dir)
	return err
}

// TestResult: the JSON is the record alone, the text the record's own with the directory.
func TestResult(t *testing.T) {
	r := &Result[*rec]{Meta: &rec{Name: "p"}, Dir: "out/p"}
	b, err := json.Marshal(r)
	if err != nil || string(b) != `{"name":"p"}` {
		t.Errorf("JSON %s, %v; want the record alone", b, err)
	}
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil || buf.String() != "p in out/p\n" {
		t.Errorf("text %q, %v", buf.String(), err)
	}
}
