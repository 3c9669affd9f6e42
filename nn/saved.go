package nn

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
)

// ParamRef names one saved parameter: its name and shape.
type ParamRef struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// Saved is the parameter part of a JSON checkpoint (the RL policy's and the gym agent's):
// every parameter's name and shape, in order, and their values as Params.Bytes in
// base64.
type Saved struct {
	Params  []ParamRef `json:"params"`
	Weights string     `json:"weights"` // base64 of little-endian float32, parameters in order
}

// ErrLayout is wrapped by Restore's error when the saved parameters are not the
// receiving model's (other names, shapes or count): another architecture, not damage.
var ErrLayout = errors.New("saved parameters do not fit the model")

// Save records ps.
func Save(ps Params) Saved {
	s := Saved{Params: make([]ParamRef, len(ps)), Weights: base64.StdEncoding.EncodeToString(ps.Bytes())}
	for i, p := range ps {
		s.Params[i] = ParamRef{Name: p.Name, Shape: slices.Clone(p.Shape)}
	}
	return s
}

// Restore sets ps (whose names and shapes are the model's) to the saved values. Saved
// parameters of other names, shapes or number are an error wrapping ErrLayout; weights
// that do not decode or do not fill ps exactly are another error (damage).
func (s Saved) Restore(ps Params) error {
	if len(s.Params) != len(ps) {
		return fmt.Errorf("%w: %d parameters, want %d", ErrLayout, len(s.Params), len(ps))
	}
	for i, p := range ps {
		if s.Params[i].Name != p.Name || !slices.Equal(s.Params[i].Shape, p.Shape) {
			return fmt.Errorf("%w: parameter %d is %s%v, want %s%v", ErrLayout, i, s.Params[i].Name, s.Params[i].Shape, p.Name, p.Shape)
		}
	}
	raw, err := base64.StdEncoding.DecodeString(s.Weights)
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	return ps.SetBytes(raw)
}
