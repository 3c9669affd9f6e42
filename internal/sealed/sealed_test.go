package sealed

import (
	"errors"
	"strings"
	"testing"
)

func TestSealVerify(t *testing.T) {
	doc := []byte("{\n  \"format\": \"x\",\n  \"checksum\": \"\",\n  \"value\": 61\n}\n")
	s, err := Seal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(s); err != nil {
		t.Fatalf("sealed file does not verify: %v", err)
	}
	edited := []byte(strings.Replace(string(s), "61", "62", 1))
	if err := Verify(edited); err == nil || !strings.Contains(err.Error(), "changed after it was written") {
		t.Errorf("an edited value: %v", err)
	}
	if err := Verify([]byte(`{"value": 1}`)); !errors.Is(err, ErrNoChecksum) {
		t.Errorf("no field: %v", err)
	}
	if _, err := Seal(s); err == nil {
		t.Error("sealed a file whose checksum is already filled")
	}
	two := []byte(`{"checksum": "", "inner": {"checksum": ""}}`)
	if _, err := Seal(two); err == nil {
		t.Error("sealed a file with two checksum fields")
	}
	if err := Verify(two); err == nil {
		t.Error("verified a file with two checksum fields")
	}
}
