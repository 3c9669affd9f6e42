package bitserial

// BenchNet is benchNet for the external tests (plan_bench_test.go).
func BenchNet(seed uint64) *Net { return benchNet(seed) }
