package cli

import "github.com/spf13/pflag"

// parsedValue is a pflag.Value whose parse runs as the flag is set, so a bad value fails
// naming the flag in the parser's own words (flagError passes the words of the types
// "shapes", "rule" and "lengths" through as they are): the one shape of --shapes,
// --lengths, --fusion and --staging. show formats the stored value (help's default).
type parsedValue[T any] struct {
	p     *T
	parse func(string) (T, error)
	show  func(T) string
	typ   string
}

// checkedString is a parsedValue holding the string as given, once check accepts it.
func checkedString(p *string, typ string, check func(string) error) pflag.Value {
	return parsedValue[string]{p: p, typ: typ, show: func(s string) string { return s },
		parse: func(s string) (string, error) { return s, check(s) }}
}

func (v parsedValue[T]) String() string {
	if v.p == nil || v.show == nil {
		return ""
	}
	return v.show(*v.p)
}

func (v parsedValue[T]) Set(s string) error {
	x, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.p = x
	return nil
}

func (v parsedValue[T]) Type() string { return v.typ }
