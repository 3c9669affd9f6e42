package ragged

import (
	"errors"
	"fmt"

	"github.com/tpucost/tpucost/compiler"
	"github.com/tpucost/tpucost/tpusim"
)

// Request is `tpucost sim SRC --lengths L,L,...`: the settings of a plain sim and
// Lengths, which selects the zoo model Src's batch of sequences of those lengths, timed
// padded and ragged (TimeZoo). A ragged batch is built from default compiles at every
// length on one chip, so the settings that say otherwise (Shapes, Config, Chips, a fusion
// rule but xla, staging) are refused.
type Request struct {
	tpusim.SimRequest
	Lengths string // ParseLengths; empty: no ragged batch (SimRequest.Simulate)
}

// Validate refuses the settings a ragged batch does not take, naming the flags.
func (r Request) Validate() error {
	switch {
	case r.Shapes != "":
		return errors.New("--lengths sizes every sequence itself: drop --shapes")
	case r.Config != "":
		return errors.New("--lengths times default compiles at every length: drop --config (a config's kernel keys hold at one length)")
	case r.Chips != 0:
		return errors.New("--lengths times one chip: drop --chips")
	case r.Fusion != "" && r.Fusion != compiler.FusionXLA:
		return fmt.Errorf("--lengths times default compiles at every length: --fusion %s is not supported here (drop --fusion)", r.Fusion)
	case r.Staging != compiler.StagingOff:
		return fmt.Errorf("--lengths times default compiles at every length: --staging %s is not supported here (drop --staging)", r.Staging)
	}
	return nil
}

// Time validates r and times the batch on c (TimeZoo).
func (r Request) Time(c tpusim.Chip) (*Report, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	lengths, err := ParseLengths(r.Lengths)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	rep, err := TimeZoo(r.Src, lengths, c)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	return rep, nil
}
