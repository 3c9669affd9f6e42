package jsonerr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// ExplainFor is Explain for a decoding into v: an unknown field (a strict decoding's
// refusal) is reported at its line and column with its JSON path and the fields allowed
// there, e.g. `cfg.json:3:5: unknown field "bogus" in tile.k1 (allowed: tile, flags)`.
func ExplainFor(file string, data []byte, err error, v any) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") && v != nil {
		if path, allowed, off, ok := unknownField(data, reflect.TypeOf(v)); ok {
			line, col := Position(data, off)
			where := ""
			if path != "" {
				where = " in " + path
			}
			return &Error{File: file, Line: line, Col: col, Field: path,
				Msg: fmt.Sprintf("%s%s (allowed: %s)", strings.TrimPrefix(msg, "json: "), where, strings.Join(allowed, ", ")), Err: err}
		}
	}
	return Explain(file, data, err)
}

// frame is one open object or array of the scan in unknownField.
type frame struct {
	t         reflect.Type // the Go type decoded into (nil: not checked)
	object    bool
	expectKey bool
	path      string
	key       string // the object's current key
}

// unknownField scans data (JSON decoded into a value of type t) for the first object key
// that the struct it decodes into lacks; it returns the key's JSON path ("" at the top),
// the field names allowed there and the key's byte offset.
func unknownField(data []byte, t reflect.Type) (path string, allowed []string, off int64, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var stack []*frame
	child := func() (reflect.Type, string) { // the type and path of the next value
		if len(stack) == 0 {
			return t, ""
		}
		f := stack[len(stack)-1]
		if f.t == nil {
			return nil, f.path
		}
		et := deref(f.t)
		p := f.path
		if f.object {
			p = join(p, f.key)
			switch et.Kind() {
			case reflect.Struct:
				ft, _ := structField(et, f.key)
				return ft, p
			case reflect.Map:
				return et.Elem(), p
			}
			return nil, p
		}
		if et.Kind() == reflect.Slice || et.Kind() == reflect.Array {
			return et.Elem(), p
		}
		return nil, p
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", nil, 0, false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if d, isDelim := tok.(json.Delim); isDelim && d == '}' {
				stack = stack[:len(stack)-1]
				markValueDone(stack)
				continue
			}
			key, _ := tok.(string)
			top.key, top.expectKey = key, false
			if top.t != nil {
				if et := deref(top.t); et.Kind() == reflect.Struct {
					if _, found := structField(et, key); !found {
						return top.path, fieldNames(et), keyOffset(data, before, key), true
					}
				}
			}
			continue
		}
		switch d := tok.(type) {
		case json.Delim:
			switch d {
			case '{', '[':
				ct, p := child()
				stack = append(stack, &frame{t: ct, object: d == '{', expectKey: d == '{', path: p})
			case ']':
				stack = stack[:len(stack)-1]
				markValueDone(stack)
			}
		default:
			markValueDone(stack)
		}
		if len(stack) == 0 {
			return "", nil, 0, false
		}
	}
}

// markValueDone records that the value of the innermost object's current key is read.
func markValueDone(stack []*frame) {
	if len(stack) > 0 && stack[len(stack)-1].object {
		stack[len(stack)-1].expectKey = true
	}
}

// keyOffset is the offset of the quoted key at or after from (the decoder's offset
// before the token, which may sit before a comma or spaces).
func keyOffset(data []byte, from int64, key string) int64 {
	q, _ := json.Marshal(key)
	if i := bytes.Index(data[from:], q); i >= 0 {
		return from + int64(i)
	}
	return from
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonName is a struct field's JSON name ("" if it is skipped or embedded untagged).
func jsonName(f reflect.StructField) (name string, embedded bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", false
	}
	name, _, _ = strings.Cut(tag, ",")
	if name == "" && f.Anonymous && deref(f.Type).Kind() == reflect.Struct {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// structField finds the field key names in struct t (embedded structs' fields promoted;
// names matched case-insensitively, as encoding/json does).
func structField(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, embedded := jsonName(f)
		if embedded {
			if ft, ok := structField(deref(f.Type), key); ok {
				return ft, true
			}
			continue
		}
		if name != "" && strings.EqualFold(name, key) {
			return f.Type, true
		}
	}
	return nil, false
}

// fieldNames lists the JSON names of struct t's fields, sorted.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, embedded := jsonName(f)
		if embedded {
			out = append(out, fieldNames(deref(f.Type))...)
		} else if name != "" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
