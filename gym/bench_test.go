package gym

import "testing"

// BenchmarkEpisode measures a reset and one step of every pass, in order, on a
// mid-sized zoo training step (observations with their graph tensors included).
func BenchmarkEpisode(b *testing.B) {
	e, err := New(Options{MaxSteps: Stop()})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.Reset("gpt2_tiny_s128_b8_train"); err != nil {
			b.Fatal(err)
		}
		for a := range Stop() {
			if _, _, _, err := e.Step(a); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAgentAct measures encoding an observation and the policy's forward pass.
func BenchmarkAgentAct(b *testing.B) {
	e, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	o, err := e.Reset("gpt2_tiny_s128_b8_train")
	if err != nil {
		b.Fatal(err)
	}
	a := NewAgent(1)
	for b.Loop() {
		a.Act(o)
	}
}
