package tune

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tpucost/tpucost/tpusim"
	"github.com/tpucost/tpucost/zoo"
)

// scoringCalls returns the Progress reports made while a model search scored candidates.
func scoringCalls(calls []Progress) []Progress {
	var out []Progress
	for _, p := range calls {
		if p.ScoreBudget > 0 {
			out = append(out, p)
		}
	}
	return out
}

// checkScoringProgress: a model search reports its programs scored as it goes (not only
// at its end): Scored grows batch by batch up to what the report counts, never past
// ScoreBudget, with reports strictly inside the search.
func checkScoringProgress(t *testing.T, name string, calls []Progress, scored, budget int) {
	t.Helper()
	sc := scoringCalls(calls)
	inside := 0
	for i, p := range sc {
		if p.ScoreBudget != budget || p.Scored > budget || (i > 0 && p.Scored < sc[i-1].Scored) {
			t.Errorf("%s: scoring progress %+v (budget %d)", name, p, budget)
		}
		if p.Scored > 0 && p.Scored < scored {
			inside++
		}
	}
	if len(sc) == 0 || sc[len(sc)-1].Scored != scored || inside == 0 {
		t.Errorf("%s: %d scoring reports (%d inside the search), last %+v; want them to reach the %d programs scored", name, len(sc), inside, sc, scored)
	}
}

// TestModelSearchReportsProgress: the stage where a learned model scores thousands of
// candidates (seconds to a minute, measuring nothing) reports through Options.Progress as
// it goes, in a whole-program run and in a shape-generic one; the measurements after it
// report without the scoring counts.
func TestModelSearchReportsProgress(t *testing.T) {
	chip := testChip(t)
	var calls []Progress
	o := Options{Chip: chip, Budget: 20, Seed: 3, Strategy: Annealing, ModelEvals: 40, TopKGraph: 4,
		GraphModel: simModel{chip: chip, err: 0.1}, Progress: func(p Progress) { calls = append(calls, p) }}
	r := mustRun(t, smallModule(t), o)
	checkScoringProgress(t, "run", calls, r.ModelEvaluations, o.ModelEvals)
	if last := calls[len(calls)-1]; last.ScoreBudget != 0 || last.Measurements != r.Measurements {
		t.Errorf("run: the last report %+v is not the measurements' (%d)", last, r.Measurements)
	}

	calls = nil
	list := zoo.ShapeList{Name: "seq", Values: []int{32, 128}}
	o.ModelEvals = 32 // 16 configs, 2 programs each
	rep, err := RunShapes(context.Background(), shapesModel, list, o, false)
	if err != nil {
		t.Fatal(err)
	}
	checkScoringProgress(t, "shapes", calls, rep.ModelEvaluations, o.ModelEvals/len(list.Values))
}

// TestRequestShowsProgress: the command line's runs show progress on Log (stderr) in
// every mode that can take long: a ragged batch (--lengths, which once printed nothing
// for 16 s) and model-guided searches (a shape-generic one once stopped at "0/300" while
// the model scored).
func TestRequestShowsProgress(t *testing.T) {
	chip := testChip(t)
	ragged, shapes, one := cliRequest(shapesModel), cliRequest(shapesModel), cliRequest("mlp_96x2_b1")
	ragged.Lengths, ragged.Budget, ragged.Strategy = "32,64,64", 6, string(Random)
	shapes.Shapes, shapes.Budget, shapes.ModelEvals, shapes.Strategy, shapes.ModelDir = "seq=32,128", 6, 32, string(Annealing), "fake"
	shapes.LoadModel = func(string, tpusim.Chip, bool) (Model, string, error) { return simModel{chip: chip, err: 0.1}, "", nil }
	one.ModelDir, one.LoadModel, one.ModelEvals = "fake", shapes.LoadModel, 32
	for _, c := range []struct {
		name string
		q    Request
		want string
	}{
		{"--lengths", ragged, "tune " + shapesModel},
		{"--shapes --model", shapes, "scored by the model"},
		{"--model", one, "scored by the model"},
	} {
		var log bytes.Buffer
		c.q.Log = &log
		if _, err := c.q.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(log.String(), c.want) {
			t.Errorf("%s: Log %q has no progress (want %q)", c.name, log.String(), c.want)
		}
	}
}
