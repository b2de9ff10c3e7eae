//go:build !wasip1

package weir

import (
	"encoding/json"
	"sort"
	"testing"
)

type winOut struct {
	Key   string `json:"key"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Count int64  `json:"count"`
}

func keyOf(r *Record) ([]byte, error) { return r.Key, nil }

// feed runs keyed events in batches of 7, fires every timer, and returns
// the outputs sorted.
func feed(t *testing.T, evs [][2]int64) []winOut {
	var got []winOut
	collect := func(outs []Out) {
		for _, o := range outs {
			var w winOut
			if err := json.Unmarshal([]byte(o.Value), &w); err != nil {
				t.Fatal(err)
			}
			got = append(got, w)
		}
	}
	for i := 0; i < len(evs); i += 7 {
		var recs []In
		for _, e := range evs[i:min(i+7, len(evs))] {
			recs = append(recs, In{Value: "x", Key: str("k" + string(rune('0'+e[0]))), Timestamp: e[1]})
		}
		outs, rejected, err := Run(recs)
		if err != nil || len(rejected) > 0 {
			t.Fatal(err, rejected)
		}
		collect(outs)
	}
	outs, _, err := FireTimers(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	collect(outs)
	sort.Slice(got, func(i, j int) bool {
		a, b := got[i], got[j]
		return a.Key < b.Key || a.Key == b.Key && (a.Start < b.Start || a.Start == b.Start && a.End < b.End)
	})
	return got
}

func events(n int, spread int64) [][2]int64 {
	x := int64(7)
	next := func() int64 { x = (x*1103515245 + 12345) % 2147483648; return x }
	var evs [][2]int64
	for i := 0; i < n; i++ {
		evs = append(evs, [2]int64{next() % 3, next() % spread * 10})
	}
	return evs
}

func TestFixedWindowsMatchAReference(t *testing.T) {
	evs := events(200, 50)
	for _, sz := range [][2]int64{{100, 100}, {100, 30}} {
		Reset()
		ResetState()
		Windows(Sliding(sz[0], sz[1], Count{}, keyOf))
		want := map[[2]int64]int64{}
		for _, e := range evs {
			for s := e[1] - e[1]%sz[1]; s+sz[0] > e[1]; s -= sz[1] {
				want[[2]int64{e[0], s}]++
			}
		}
		var exp []winOut
		for k, n := range want {
			exp = append(exp, winOut{"k" + string(rune('0'+k[0])), k[1], k[1] + sz[0], n})
		}
		sort.Slice(exp, func(i, j int) bool {
			a, b := exp[i], exp[j]
			return a.Key < b.Key || a.Key == b.Key && a.Start < b.Start
		})
		got := feed(t, evs)
		if len(got) != len(exp) {
			t.Fatalf("%v: %d windows, want %d", sz, len(got), len(exp))
		}
		for i := range exp {
			if got[i] != exp[i] {
				t.Fatalf("%v: %+v, want %+v", sz, got[i], exp[i])
			}
		}
	}
}

func TestSessionsMergeAndCloseAtTheWatermark(t *testing.T) {
	Reset()
	ResetState()
	Windows(Session(25, Count{}, keyOf))
	evs := events(120, 200)
	var exp []winOut
	for k := int64(0); k < 3; k++ {
		var ts []int64
		for _, e := range evs {
			if e[0] == k {
				ts = append(ts, e[1])
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		start, last, n := ts[0], ts[0], int64(1)
		for _, x := range ts[1:] {
			if x <= last+25 {
				last, n = max(last, x), n+1
			} else {
				exp = append(exp, winOut{"k" + string(rune('0'+k)), start, last + 25, n})
				start, last, n = x, x, 1
			}
		}
		exp = append(exp, winOut{"k" + string(rune('0'+k)), start, last + 25, n})
	}
	got := feed(t, evs)
	if len(got) != len(exp) {
		t.Fatalf("%d sessions, want %d: %+v", len(got), len(exp), got)
	}
	for i := range exp {
		if got[i] != exp[i] {
			t.Fatalf("%+v, want %+v", got[i], exp[i])
		}
	}
}

func TestOtherOutputModesAreRefused(t *testing.T) {
	Reset()
	ResetState()
	SetOutputMode(Update)
	Windows(Tumbling(100, Count{}, keyOf))
	if _, _, err := Run([]In{{Key: str("a"), Timestamp: 1}}); err == nil {
		t.Fatal("update mode was accepted")
	}
	if JSONString([]byte("a\"b\\c\x01é")) != `"a\"b\\c\u0001é"` {
		t.Fatal(JSONString([]byte("a\"b\\c\x01é")))
	}
}
