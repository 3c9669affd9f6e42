package eval

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPredictRequestValidate: a program or a dataset, each with the flags it admits; every
// other combination is one error naming the flags.
func TestPredictRequestValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		r    PredictRequest
		want string // "" for valid
	}{
		{"program", PredictRequest{Model: "m", Src: "mlp", Shapes: "seq=64", Config: "c.json", Top: 3, ChipSet: true}, ""},
		{"rows", PredictRequest{Model: "m", Data: "d", Top: 3, MaxRows: 5}, ""},
		{"no model", PredictRequest{Src: "mlp"}, "--model is required"},
		{"negative top", PredictRequest{Model: "m", Src: "mlp", Top: -1}, "--top \"-1\": want an integer >= 0 (0: list no options)"},
		{"negative rows", PredictRequest{Model: "m", Data: "d", MaxRows: -2}, "--rows \"-2\": want an integer >= 0 (0: all)"},
		{"shapes with data", PredictRequest{Model: "m", Data: "d", Shapes: "seq=64"}, "--shapes sizes SRC: give it with SRC, not with --data"},
		{"both", PredictRequest{Model: "m", Data: "d", Src: "mlp"}, "give SRC or --data, not both"},
		{"neither", PredictRequest{Model: "m"}, "give SRC (a zoo model or an HLO file) or --data DIR"},
		{"chip with data", PredictRequest{Model: "m", Data: "d", ChipSet: true}, "--chip, --vmem and --config apply to SRC; --data rows carry their own features"},
		{"config with data", PredictRequest{Model: "m", Data: "d", Config: "c.json"}, "--chip, --vmem and --config apply to SRC; --data rows carry their own features"},
		{"rows with a program", PredictRequest{Model: "m", Src: "mlp", MaxRows: 4}, "--rows applies to --data"},
	} {
		err := c.r.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// A program needs its hooks: an error, not a nil call.
	if _, err := (PredictRequest{Model: "m", Src: "mlp"}).Predict(); err == nil || !strings.Contains(err.Error(), "Target, Compile and Timer") {
		t.Errorf("program without hooks: %v, want an error naming them", err)
	}
}

// TestPredictResultJSON: a result's JSON is the report it holds, as printed without it.
func TestPredictResultJSON(t *testing.T) {
	for _, r := range []*PredictResult{{Program: &ProgramReport{Program: "p", Task: "tile"}}, {Rows: &RowReport{}}} {
		got, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var inner any = r.Program
		if r.Rows != nil {
			inner = r.Rows
		}
		want, _ := json.Marshal(inner)
		if string(got) != string(want) {
			t.Errorf("JSON %s, want the report's own %s", got, want)
		}
	}
}
