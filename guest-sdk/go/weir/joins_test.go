//go:build !wasip1

package weir

import (
	"math/rand"
	"sort"
	"strings"
	"testing"
)

type joinRow struct {
	side  byte
	key   string
	ts    int64
	value string
}

func registerJoin(kind JoinKind) {
	Reset()
	ResetState()
	side := func(r *JoinRow) string {
		if r == nil {
			return "-"
		}
		return string(r.Value)
	}
	Joins(&Join{Kind: kind, Left: "orders", Right: "payments", BeforeMs: 2, AfterMs: 5,
		Output: func(j *Joined) []byte { return []byte(side(j.Left) + "|" + side(j.Right)) }})
}

// joinReference is every pair with key equal and right time in
// [left - 2, left + 5], then (outer) the rows that matched nothing.
func joinReference(kind JoinKind, rows []joinRow) []string {
	hit := func(a, b joinRow) bool { return a.key == b.key && a.ts-2 <= b.ts && b.ts <= a.ts+5 }
	var out []string
	for _, a := range rows {
		if a.side != 'L' {
			continue
		}
		any := false
		for _, b := range rows {
			if b.side == 'R' && hit(a, b) {
				out = append(out, a.value+"|"+b.value)
				any = true
			}
		}
		if !any && (kind == LeftOuterJoin || kind == FullOuterJoin) {
			out = append(out, a.value+"|-")
		}
	}
	for _, b := range rows {
		if b.side != 'R' || !(kind == RightOuterJoin || kind == FullOuterJoin) {
			continue
		}
		any := false
		for _, a := range rows {
			any = any || (a.side == 'L' && hit(a, b))
		}
		if !any {
			out = append(out, "-|"+b.value)
		}
	}
	sort.Strings(out)
	return out
}

// simulateJoin feeds random batches, each from one source, with the host's
// watermark (the smallest of each source's largest time, minus a delay)
// and late drops, then the final watermark.
func simulateJoin(t *testing.T, kind JoinKind, seed int64) ([]string, []string) {
	registerJoin(kind)
	rnd := rand.New(rand.NewSource(seed))
	var wm int64
	hasWM := false
	top := map[byte]int64{}
	clock := map[byte]int64{}
	var kept []joinRow
	var got []string
	collect := func(outs []Out, _ []BadRecord, err error) {
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			got = append(got, o.Value)
		}
	}
	for n := 0; n < 300; {
		side := byte("LR"[rnd.Intn(2)])
		var batch []joinRow
		for i := 1 + rnd.Intn(11); i > 0; i-- {
			clock[side] += int64(rnd.Intn(3))
			batch = append(batch, joinRow{side, "k" + string(rune('0'+rnd.Intn(6))), clock[side] - int64(rnd.Intn(8)),
				string(side) + string(rune('A'+n/26%26)) + string(rune('a'+n%26))})
			n++
		}
		native.watermark, native.hasWatermark = wm, hasWM
		var recs []In
		for _, b := range batch {
			if !hasWM || b.ts >= wm {
				kept = append(kept, b)
				recs = append(recs, In{Value: b.value, Key: str(b.key), Timestamp: b.ts})
			}
		}
		source := "orders"
		if side == 'R' {
			source = "payments"
		}
		outs, bad, err := RunFrom(source, int64(n*100), recs)
		if len(bad) > 0 {
			t.Fatal(bad)
		}
		collect(outs, bad, err)
		if hasWM {
			collect(FireTimers(wm))
		}
		for _, b := range batch {
			if v, ok := top[side]; !ok || b.ts > v {
				top[side] = b.ts
			}
		}
		next := int64(1 << 62)
		for _, v := range top {
			next = min(next, v-6)
		}
		if !hasWM || next > wm {
			wm, hasWM = next, true
		}
	}
	collect(FireTimers(1 << 50))
	if len(native.state) != 0 {
		t.Fatalf("%d rows left in state", len(native.state))
	}
	sort.Strings(got)
	return got, joinReference(kind, kept)
}

func TestEveryJoinKindEqualsItsDefinition(t *testing.T) {
	for _, kind := range []JoinKind{InnerJoin, LeftOuterJoin, RightOuterJoin, FullOuterJoin} {
		for _, seed := range []int64{1, 7, 42} {
			got, want := simulateJoin(t, kind, seed)
			if !strings.Contains(strings.Join(want, " "), "L") || len(want) == 0 {
				t.Fatal("no rows")
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("kind %d seed %d:\n got %v\nwant %v", kind, seed, got, want)
			}
		}
	}
}

func TestJoinRowsLeaveWhenTheRangeEnds(t *testing.T) {
	registerJoin(LeftOuterJoin)
	if _, _, err := RunFrom("orders", 0, []In{{Value: "o", Key: str("k"), Timestamp: 100}}); err != nil {
		t.Fatal(err)
	}
	if outs, _, _ := FireTimers(105); len(outs) != 0 {
		t.Fatal(outs)
	}
	outs, _, _ := FireTimers(106)
	if len(outs) != 1 || outs[0].Value != "o|-" || *outs[0].Key != "k" || outs[0].Timestamp != 100 {
		t.Fatal(outs)
	}
	if len(native.state) != 0 {
		t.Fatal(native.state)
	}
}

func TestJoinMisuseIsExplained(t *testing.T) {
	registerJoin(InnerJoin)
	_, _, err := RunFrom("refunds", 0, []In{{Value: "x", Key: str("k")}})
	if err == nil || !strings.Contains(err.Error(), "source `refunds`, which this join does not read") {
		t.Fatal(err)
	}
	_, bad, err := RunFrom("orders", 0, []In{{Value: "x"}})
	if err != nil || len(bad) != 1 || bad[0].Reason != "record has no key to join on" {
		t.Fatal(bad, err)
	}
	k, err := JSONKey("id")(&Record{Value: []byte(`{"id":7}`)})
	if err != nil || string(k) != "7" {
		t.Fatal(string(k), err)
	}
}
