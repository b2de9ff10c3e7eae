package weir

import (
	"encoding/json"
	"testing"
)

// JSONField agrees with encoding/json on valid objects, for every member
// and for a missing one.
func TestJSONFieldAgreesWithEncodingJSON(t *testing.T) {
	docs := []string{
		`{}`,
		` { "a" : 1 , "b":[1,{"c":"}"}],"amount":150.5e1}`,
		`{"id":7,"amount":-0.25,"region":"eu","note":"h\u00e9llo \"q\" \\"}`,
		`{"n":null,"t":true,"f":false,"s":"x","o":{"amount":3},"amount":42}`,
		`{"esc\u0061ped":"yes","amount":"not a number"}`,
		`{"deep":[[[[{"a":[]}]]]],"amount":1e-3}`,
	}
	for _, d := range docs {
		var want map[string]json.RawMessage
		if err := json.Unmarshal([]byte(d), &want); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		for _, name := range []string{"a", "amount", "escaped", "o", "n", "missing"} {
			got, err := JSONField([]byte(d), name)
			if err != nil {
				t.Fatalf("%s, %s: %v", d, name, err)
			}
			w, ok := want[name]
			if got.Found() != ok || (ok && string(got.Raw) != string(w)) {
				t.Errorf("%s, %s: got %q (found %v), want %q", d, name, got.Raw, got.Found(), w)
			}
		}
	}
}

func TestJSONFieldRefusesWhatIsBrokenBeforeTheMember(t *testing.T) {
	for _, d := range []string{
		``, `not json`, `[1,2]`, `"amount"`, `{"a":01,"amount":1}`, `{"a":tru,"amount":1}`,
		`{"a":"x\q","amount":1}`, `{"a":[1,2},"amount":1}`, `{"a" 1,"amount":1}`,
		`{"a":1 "amount":1}`, `{"a":"unterminated`, "{\"a\":\"tab\there\",\"amount\":1}",
		`{"a":1.,"amount":1}`, `{"a":-,"amount":1}`, `{"a":"\u12","amount":1}`,
	} {
		if v, err := JSONField([]byte(d), "amount"); err == nil {
			t.Errorf("%q: accepted, found %q", d, v.Raw)
		}
	}
	deep := make([]byte, 0, 2100)
	deep = append(deep, `{"a":`...)
	for range 1000 {
		deep = append(deep, '[')
	}
	if _, err := JSONField(deep, "amount"); err == nil {
		t.Error("1000 nested arrays accepted")
	}
}

func TestJSONValueReadsNumbersStringsAndLiterals(t *testing.T) {
	v, _ := JSONField([]byte(`{"a":-12,"b":2.5e2,"c":"h\u00e9","d":true,"e":null,"f":12345678901234567}`), "a")
	if n, ok := v.Number(); !ok || n != -12 {
		t.Errorf("a: %v %v", n, ok)
	}
	for name, want := range map[string]float64{"b": 250, "f": 12345678901234567} {
		v, _ := JSONField([]byte(`{"b":2.5e2,"f":12345678901234567}`), name)
		if n, ok := v.Number(); !ok || n != want {
			t.Errorf("%s: %v %v", name, n, ok)
		}
	}
	v, _ = JSONField([]byte(`{"c":"h\u00e9"}`), "c")
	if s, ok := v.String(); !ok || s != "hé" {
		t.Errorf("c: %q %v", s, ok)
	}
	if _, ok := v.Number(); ok {
		t.Error("a string read as a number")
	}
	v, _ = JSONField([]byte(`{"d":true,"e":null}`), "d")
	if b, ok := v.Bool(); !ok || !b {
		t.Errorf("d: %v %v", b, ok)
	}
	v, _ = JSONField([]byte(`{"d":true,"e":null}`), "e")
	if !v.IsNull() {
		t.Error("e is null")
	}
}
