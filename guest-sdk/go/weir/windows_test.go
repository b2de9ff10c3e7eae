//go:build !wasip1

package weir

import (
	"encoding/json"
	"sort"
	"strings"
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

// reference is the windows (tumbling/sliding, or sessions when gap > 0)
// of evs per key, as a straightforward computation.
func reference(evs [][2]int64, size, slide, gap int64) map[string][]winOut {
	out := map[string][]winOut{}
	for k := int64(0); k < 3; k++ {
		key := "k" + string(rune('0'+k))
		var ts []int64
		for _, e := range evs {
			if e[0] == k {
				ts = append(ts, e[1])
			}
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		if gap > 0 {
			for i := 0; i < len(ts); {
				start, last, j := ts[i], ts[i], i+1
				for j < len(ts) && ts[j] <= last+gap {
					last, j = ts[j], j+1
				}
				out[key] = append(out[key], winOut{key, start, last + gap, int64(j - i)})
				i = j
			}
			continue
		}
		counts := map[int64]int64{}
		for _, t := range ts {
			for s := t - t%slide; s+size > t; s -= slide {
				counts[s]++
			}
		}
		for s, n := range counts {
			out[key] = append(out[key], winOut{key, s, s + size, n})
		}
		sort.Slice(out[key], func(i, j int) bool { return out[key][i].Start < out[key][j].Start })
	}
	return out
}

func decode(t *testing.T, outs []Out) map[string][]winOut {
	got := map[string][]winOut{}
	for _, o := range outs {
		var w winOut
		if err := json.Unmarshal([]byte(o.Value), &w); err != nil {
			t.Fatal(err)
		}
		if string(*o.Key) != w.Key || o.Timestamp != w.End-1 {
			t.Fatalf("output %+v keyed %q at %d", w, *o.Key, o.Timestamp)
		}
		got[w.Key] = append(got[w.Key], w)
	}
	for k := range got {
		sort.Slice(got[k], func(i, j int) bool { return got[k][i].Start < got[k][j].Start })
	}
	return got
}

// In update mode each batch emits, for every key it touched, the key's
// windows it changed with their counts so far; in complete mode every
// window so far. Neither drops state before the watermark passes.
func TestUpdateAndCompleteModesEmitWhatTheyChangedOrEverything(t *testing.T) {
	evs := events(150, 60)
	for _, mode := range []OutputMode{Update, Complete} {
		for _, shape := range [][3]int64{{100, 100, 0}, {100, 40, 0}, {0, 0, 35}} {
			Reset()
			ResetState()
			SetOutputMode(mode)
			if shape[2] > 0 {
				Windows(Session(shape[2], Count{}, keyOf))
			} else {
				Windows(Sliding(shape[0], shape[1], Count{}, keyOf))
			}
			for i := 0; i < len(evs); i += 9 {
				batch := evs[i:min(i+9, len(evs))]
				var recs []In
				for _, e := range batch {
					recs = append(recs, In{Value: "x", Key: str("k" + string(rune('0'+e[0]))), Timestamp: e[1]})
				}
				outs, rejected, err := Run(recs)
				if err != nil || len(rejected) > 0 {
					t.Fatal(err, rejected)
				}
				got, want := decode(t, outs), reference(evs[:i+len(batch)], shape[0], shape[1], shape[2])
				if mode == Complete {
					assertWindows(t, mode, shape, got, want, nil)
					continue
				}
				assertWindows(t, mode, shape, got, want, batch)
			}
			outs, _, err := FireTimers(1 << 40)
			if err != nil || len(outs) != 0 {
				t.Fatalf("%v %v: timers emitted %d (%v)", mode, shape, len(outs), err)
			}
			left := len(StateScanPrefix(nil))
			if (mode == Update) != (left == 0) {
				t.Fatalf("%v %v: %d state entries after the final watermark", mode, shape, left)
			}
		}
	}
}

// assertWindows checks got against want: every window (complete), or in
// update mode the windows the batch's events fall in (a session key's
// every session).
func assertWindows(t *testing.T, mode OutputMode, shape [3]int64, got, want map[string][]winOut, batch [][2]int64) {
	t.Helper()
	if batch != nil {
		changed := map[string][]winOut{}
		for key, ws := range want {
			for _, w := range ws {
				hit := false
				for _, e := range batch {
					sameKey := "k"+string(rune('0'+e[0])) == key
					hit = hit || sameKey && (shape[2] > 0 || e[1] >= w.Start && e[1] < w.End)
				}
				if hit {
					changed[key] = append(changed[key], w)
				}
			}
		}
		want = changed
	}
	if len(got) != len(want) {
		t.Fatalf("%v %v: keys %v, want %v", mode, shape, got, want)
	}
	for k := range want {
		if len(got[k]) != len(want[k]) {
			t.Fatalf("%v %v %s: %v, want %v", mode, shape, k, got[k], want[k])
		}
		for i := range want[k] {
			if got[k][i] != want[k][i] {
				t.Fatalf("%v %v %s: %+v, want %+v", mode, shape, k, got[k][i], want[k][i])
			}
		}
	}
}

func TestWindowsWithoutEventTimeAreRefusedButCompleteMode(t *testing.T) {
	for _, mode := range []OutputMode{Append, Update, Complete} {
		Reset()
		ResetState()
		SetEventTime(false)
		SetOutputMode(mode)
		Windows(Tumbling(100, Count{}, keyOf))
		_, _, err := Run([]In{{Key: str("a"), Timestamp: 1}})
		if (err == nil) != (mode == Complete) {
			t.Fatalf("%v without event time: %v", mode, err)
		}
		if err != nil && !strings.Contains(err.Error(), "needs an [event-time] section") {
			t.Fatal(err)
		}
	}
	if JSONString([]byte("a\"b\\c\x01é")) != `"a\"b\\c\u0001é"` {
		t.Fatal(JSONString([]byte("a\"b\\c\x01é")))
	}
}
