package tpusim

// Default is s with a default target (a model's, say: the chip its training data was
// generated for): preset, when s names no preset explicitly and preset is not empty, with
// vmemMiB as the VMEM override unless s has one.
func (s ChipSpec) Default(preset string, vmemMiB int) ChipSpec {
	if !s.PresetSet && preset != "" {
		s.Preset = preset
		if s.VMEMMiB == 0 {
			s.VMEMMiB = vmemMiB
		}
	}
	return s
}
