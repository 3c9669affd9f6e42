package gen

import (
	"strings"
	"testing"

	"github.com/tpucost/tpucost/dataset"
)

// TestTaskErrorNamesEveryTask checks that the --task error lists the task registry
// (dataset.Tasks), so the list cannot drift from it.
func TestTaskErrorNamesEveryTask(t *testing.T) {
	o := Options{Task: "speed"}
	err := o.Validate()
	if err == nil {
		t.Fatal("--task speed: no error")
	}
	for _, task := range dataset.Tasks() {
		if !strings.Contains(err.Error(), string(task)) {
			t.Errorf("the --task error does not name %s: %v", task, err)
		}
	}
}
