// Package eval scores trained cost models against data: Evaluate and Run compare a
// model's predictions with a dataset's test split (tpucost eval: metrics, per-program
// rows, plots); ReportProgram and PredictDataset are the prediction reports of tpucost
// predict, a compiled program's kernels beside the simulator (ReportProgram, with a
// caller's KernelTimer: eval does not simulate) or a dataset's rows (PredictDataset).
package eval
