package weir

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func str(s string) *string { return &s }

func TestMapKeepsKeyHeadersTimestampAndPassesTombstones(t *testing.T) {
	Reset()
	Map(func(r *Record) ([]byte, error) {
		if len(r.Value) == 0 {
			return nil, errors.New("empty record")
		}
		return bytes.ToUpper(r.Value), nil
	})
	h := []Header{{Name: "h", Value: []byte("1")}}
	outs, rejected, err := Run([]In{
		{Value: "a", Key: str("k"), Headers: h, Timestamp: 5},
		{Key: str("gone"), Tombstone: true},
		{Value: ""},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Value != "A" || *outs[0].Key != "k" || outs[0].Timestamp != 5 ||
		!reflect.DeepEqual(outs[0].Headers, h) {
		t.Fatalf("%+v", outs)
	}
	if outs[1].HasValue || *outs[1].Key != "gone" {
		t.Fatalf("tombstone: %+v", outs[1])
	}
	if !reflect.DeepEqual(rejected, []BadRecord{{Index: 2, Reason: "empty record"}}) {
		t.Fatalf("%+v", rejected)
	}
}

// A batch without keys, headers or tombstones takes the plain map path.
func TestAPlainMapRefusesAroundRecordsAndStopsWhenBroken(t *testing.T) {
	Reset()
	Map(func(r *Record) ([]byte, error) {
		switch string(r.Value) {
		case "bad":
			return nil, errors.New("bad")
		case "stop":
			return nil, Broken("out of patience")
		}
		return bytes.ToUpper(r.Value), nil
	})
	outs, rejected, err := Run([]In{{Value: "a", Timestamp: 7}, {Value: "bad"}, {Value: "c"}})
	if err != nil || len(outs) != 2 || outs[0].Value != "A" || outs[0].Timestamp != 7 ||
		outs[1].Value != "C" || outs[1].Origin != 2 {
		t.Fatalf("%+v %v", outs, err)
	}
	if !reflect.DeepEqual(rejected, []BadRecord{{Index: 1, Reason: "bad"}}) {
		t.Fatalf("%+v", rejected)
	}
	if _, _, err := Run([]In{{Value: "a"}, {Value: "stop"}}); err == nil || !broken(err) {
		t.Fatalf("broken: %v", err)
	}
}

func TestFilterAndRoute(t *testing.T) {
	Reset()
	Filter(func(r *Record) (bool, error) { return len(r.Value) > 1, nil })
	outs, _, _ := Run([]In{{Value: "a"}, {Value: "bb"}})
	if len(outs) != 1 || outs[0].Value != "bb" || outs[0].Origin != 1 {
		t.Fatalf("%+v", outs)
	}
	Reset()
	Route(func(r *Record) (string, error) {
		if len(r.Value) > 1 {
			return "big", nil
		}
		return "", nil
	})
	outs, _, _ = Run([]In{{Value: "a"}, {Value: "bb"}})
	if outs[0].Output != "" || outs[1].Output != "big" {
		t.Fatalf("%+v", outs)
	}
}

func TestFlatMapRollsBackARefusedRecordAndBrokenStops(t *testing.T) {
	Reset()
	FlatMap(func(r *Record, out *Output) error {
		for _, w := range strings.Fields(string(r.Value)) {
			k := []byte(w)
			out.EmitRecord(OutputRecord{Key: k, HasKey: true, Value: k, HasValue: true,
				Timestamp: r.Timestamp + 1, HasTimestamp: true})
			if w == "bad" {
				return errors.New("no bad words")
			}
			if w == "stop" {
				return Broken("out of patience")
			}
		}
		return nil
	})
	outs, rejected, err := Run([]In{{Value: "x y", Timestamp: 10}, {Value: "ok bad"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[1].Value != "y" || outs[1].Timestamp != 11 || *outs[1].Key != "y" {
		t.Fatalf("%+v", outs)
	}
	if !reflect.DeepEqual(rejected, []BadRecord{{Index: 1, Reason: "no bad words"}}) {
		t.Fatalf("%+v", rejected)
	}
	if _, _, err := Run([]In{{Value: "stop"}}); err == nil || err.Error() != "out of patience" {
		t.Fatalf("broken: %v", err)
	}
}

func TestConfigIsRefusedWithoutOnInitAndCheckedWithIt(t *testing.T) {
	Reset()
	Map(func(r *Record) ([]byte, error) { return r.Value, nil })
	if _, _, err := Run(nil, [2]string{"x", "1"}); err == nil || !strings.Contains(err.Error(), "unknown config key `x`") {
		t.Fatalf("%v", err)
	}
	OnInit(func(c Config) error { return c.Only("factor") })
	if _, _, err := Run(nil, [2]string{"factor", "2"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(nil, [2]string{"fator", "2"}); err == nil {
		t.Fatal("a typo passed")
	}
}

func TestPerRecordCallGivesTheSameAnswer(t *testing.T) {
	Reset()
	Map(func(r *Record) ([]byte, error) { return bytes.ToUpper(r.Value), nil })
	recs, rerr := impl.ProcessRecord(&Record{Value: []byte("ab"), HasValue: true, Key: []byte("k"), HasKey: true})
	if rerr != nil || len(recs) != 1 || string(recs[0].Value) != "AB" || string(recs[0].Key) != "k" {
		t.Fatalf("%+v %v", recs, rerr)
	}
}

// A map that writes in place hands its input columns back uncopied until
// the first output that is not its record's own bytes; the outputs are the
// same either way.
func TestAnInPlaceMapMixedWithCopiesAndRefusals(t *testing.T) {
	upper := func(v []byte) []byte {
		for i, c := range v {
			if c-'a' < 26 {
				v[i] = c - 32
			}
		}
		return v
	}
	Reset()
	Map(func(r *Record) ([]byte, error) {
		switch string(r.Value) {
		case "copy":
			return []byte("COPIED"), nil
		case "bad":
			return nil, errors.New("bad")
		case "short":
			return r.Value[:2], nil
		}
		return upper(r.Value), nil
	})
	vals := func(outs []Out) (got []string) {
		for _, o := range outs {
			got = append(got, o.Value)
		}
		return got
	}
	outs, rejected, err := Run([]In{{Value: "a"}, {Value: "b"}, {Value: ""}})
	if err != nil || !reflect.DeepEqual(vals(outs), []string{"A", "B", ""}) || len(rejected) != 0 {
		t.Fatalf("all in place: %+v %+v %v", outs, rejected, err)
	}
	outs, rejected, err = Run([]In{{Value: "a"}, {Value: "copy"}, {Value: "c"}, {Value: "bad"}, {Value: "short"}})
	if err != nil || !reflect.DeepEqual(vals(outs), []string{"A", "COPIED", "C", "sh"}) {
		t.Fatalf("mixed: %+v %v", outs, err)
	}
	if outs[3].Origin != 4 || !reflect.DeepEqual(rejected, []BadRecord{{Index: 3, Reason: "bad"}}) {
		t.Fatalf("origins and refusals: %+v %+v", outs, rejected)
	}
	Reset()
	Filter(func(r *Record) (bool, error) { return string(r.Value) != "drop", nil })
	outs, _, _ = Run([]In{{Value: "a"}, {Value: "b"}})
	if !reflect.DeepEqual(vals(outs), []string{"a", "b"}) {
		t.Fatalf("filter keeping all: %+v", outs)
	}
	outs, _, _ = Run([]In{{Value: "a"}, {Value: "drop"}, {Value: "c"}})
	if !reflect.DeepEqual(vals(outs), []string{"a", "c"}) || outs[1].Origin != 2 {
		t.Fatalf("filter dropping one: %+v", outs)
	}
}
