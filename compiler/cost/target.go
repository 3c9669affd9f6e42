package cost

import "fmt"

// Target is what a compiler knows about one TPU TensorCore: enough to pick tiles with the
// analytical model and to reject tiles that do not fit in VMEM. The simulator's chip
// presets (tpusim) embed a Target and add the effects the analytical model ignores.
type Target struct {
	Name         string
	ClockHz      float64 // core clock
	MXUs         int     // matrix units per core
	MXUDim       int     // systolic array size (128)
	Lanes        int     // vector lanes (128)
	Sublanes     int     // vector sublanes (8)
	HBMBandwidth float64 // bytes/s per core
	VMEMBytes    int64   // vector memory per core
	LaunchNs     float64 // fixed cost of launching one kernel
	// StepOverheadCycles is the fixed cost of one grid step of a kernel (scalar loop
	// control, DMA descriptors and semaphores), in core cycles; 0 ignores it. The
	// analytical model charges it per step, so that the default tile does not split a
	// small kernel into many steps for a roofline difference of a few percent.
	StepOverheadCycles float64
	// Cores is the number of TensorCores that run as one device (megacore: v4's two,
	// XLA's default there); 0 or 1 for one. A kernel's output blocks are split between
	// them, each core with its own MXUs, VMEM and HBMBandwidth.
	Cores int
}

// DeviceCores is the number of cores of one device (at least 1).
func (t Target) DeviceCores() int { return max(t.Cores, 1) }

// ParallelCores is how many cores share a kernel of the given number of output blocks:
// the device's cores, at most one per block.
func (t Target) ParallelCores(blocks int64) float64 {
	return float64(min(int64(t.DeviceCores()), max(blocks, 1)))
}

// PeakFlops is the bf16 matrix peak of one core: 2 flops per multiply-add, MXUDim^2
// multiply-adds per cycle per MXU.
func (t Target) PeakFlops() float64 {
	return 2 * float64(t.MXUDim*t.MXUDim) * float64(t.MXUs) * t.ClockHz
}

// Validate reports a missing or non-physical field.
func (t Target) Validate() error {
	switch {
	case t.ClockHz <= 0:
		return fmt.Errorf("target %s: clock must be positive", t.Name)
	case t.MXUs <= 0 || t.MXUDim <= 0:
		return fmt.Errorf("target %s: needs at least one MXU of positive size", t.Name)
	case t.Lanes <= 0 || t.Sublanes <= 0:
		return fmt.Errorf("target %s: lanes and sublanes must be positive", t.Name)
	case t.HBMBandwidth <= 0:
		return fmt.Errorf("target %s: HBM bandwidth must be positive", t.Name)
	case t.VMEMBytes <= 0:
		return fmt.Errorf("target %s: VMEM size must be positive", t.Name)
	}
	return nil
}

// SublaneTile is the number of rows of an (8,128) memory tile for an element of the
// given size: 32-bit types tile (8,128), 16-bit (8,128)(2,1) i.e. 16 rows, 8-bit 32 rows.
func (t Target) SublaneTile(elemBytes int) int {
	switch {
	case elemBytes >= 4:
		return t.Sublanes
	case elemBytes == 2:
		return 2 * t.Sublanes
	default:
		return 4 * t.Sublanes
	}
}
