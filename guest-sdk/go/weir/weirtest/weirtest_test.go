package weirtest_test

import (
	"bytes"
	"errors"
	"testing"

	"weir.dev/guest/weir"
	"weir.dev/guest/weir/weirtest"
)

func TestRunsTheRegisteredFunctionAndReportsRefusals(t *testing.T) {
	weirtest.Reset()
	weir.Map(func(r *weir.Record) ([]byte, error) {
		if len(r.Value) == 0 {
			return nil, errors.New("empty")
		}
		return bytes.ToUpper(r.Value), nil
	})
	outs, rejected, err := weirtest.Run([]weirtest.In{{Value: "a", Timestamp: 3}, {Value: ""}})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Value != "A" || outs[0].Timestamp != 3 {
		t.Fatalf("%+v", outs)
	}
	if len(rejected) != 1 || rejected[0] != (weirtest.Rejected{Index: 1, Reason: "empty"}) {
		t.Fatalf("%+v", rejected)
	}
}

func TestTimersFireAtTheWatermark(t *testing.T) {
	weirtest.Reset()
	weirtest.ResetState()
	weir.Windows(weir.Tumbling(10, weir.Count{}, func(r *weir.Record) ([]byte, error) { return r.Value, nil }))
	if _, _, err := weirtest.RunFrom("events", 0, []weirtest.In{{Value: "k", Timestamp: 1}}); err != nil {
		t.Fatal(err)
	}
	if outs, _, _ := weirtest.FireTimers(9); len(outs) != 0 {
		t.Fatalf("fired early: %+v", outs)
	}
	outs, _, err := weirtest.FireTimers(10)
	if err != nil || len(outs) != 1 || outs[0].Value != `{"key":"k","start":0,"end":10,"count":1}` {
		t.Fatalf("%v %+v", err, outs)
	}
}
