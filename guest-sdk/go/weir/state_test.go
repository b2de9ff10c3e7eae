//go:build !wasip1

package weir

import "testing"

func TestStateAndTimersCountPerKeyPerWindow(t *testing.T) {
	Reset()
	ResetState()
	slot := func(key []byte, start int64) []byte { return append(append([]byte{}, key...), byte(start)) }
	FlatMap(func(r *Record, out *Output) error {
		start := r.Timestamp - r.Timestamp%10
		v, _ := StateGet(slot(r.Key, start))
		StatePut(slot(r.Key, start), append(v, 'x'))
		RegisterTimer(true, r.Key, start+10)
		return nil
	})
	OnTimer(func(tm *Timer, out *Output) error {
		v, _ := StateGet(slot(tm.Key, tm.Time-10))
		StateDelete(slot(tm.Key, tm.Time-10))
		out.Emit([]byte(string(tm.Key) + "=" + string(rune('0'+len(v)))))
		return nil
	})
	recs := []In{{Key: str("a"), Timestamp: 1}, {Key: str("b"), Timestamp: 2}, {Key: str("a"), Timestamp: 5}, {Key: str("a"), Timestamp: 11}}
	if outs, _, err := Run(recs); err != nil || len(outs) != 0 {
		t.Fatalf("%v %v", outs, err)
	}
	outs, _, err := FireTimers(10)
	if err != nil || len(outs) != 2 || outs[0].Value != "a=2" || outs[1].Value != "b=1" || *outs[0].Key != "a" || outs[0].Timestamp != 10 {
		t.Fatalf("%+v %v", outs, err)
	}
	if outs, _, _ := FireTimers(20); len(outs) != 1 || outs[0].Value != "a=1" {
		t.Fatalf("%+v", outs)
	}
	if len(native.state) != 0 {
		t.Fatalf("state left: %v", native.state)
	}
}
