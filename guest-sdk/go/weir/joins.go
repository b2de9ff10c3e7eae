package weir

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Stream-stream joins with the Rust SDK's semantics (weir_guest::join): two
// sources of one pipeline joined on a key within an event-time range,
// Spark's `left.key = right.key AND right.ts BETWEEN left.ts - before AND
// left.ts + after`, inner or outer.
//
// Each row waits in keyed state until the watermark proves no row of the
// other side can still match it, then leaves it; an outer join emits its
// unmatched rows then (nil for the missing side). A pair is emitted once,
// when its second row arrives. Outputs carry the join key and the later of
// the two rows' event times (an unmatched row's own). Rows are stored in
// the Rust SDK's layout.
//
//	func init() {
//		weir.Joins(&weir.Join{Kind: weir.InnerJoin, Left: "orders", Right: "payments",
//			AfterMs: 60_000, LeftKey: weir.JSONKey("order_id"), RightKey: weir.JSONKey("order_id")})
//	}

// JoinKind says which rows a join emits besides matched pairs.
type JoinKind int

const (
	InnerJoin      JoinKind = iota // matched pairs only
	LeftOuterJoin                  // also every left row that matched nothing
	RightOuterJoin                 // also every right row that matched nothing
	FullOuterJoin                  // also every row of either side that matched nothing
)

// JoinRow is one side's row of a joined output.
type JoinRow struct {
	Value     []byte
	Timestamp int64 // its event time
}

// Joined is a matched pair, or an outer join's unmatched row.
type Joined struct {
	Key         []byte
	Left, Right *JoinRow
}

// Join joins source Left with source Right (their [[source]] names): a
// right row matches a left row at t when its time is in [t - BeforeMs,
// t + AfterMs]. LeftKey and RightKey read the join key (nil: the record
// key); Output builds the output value (nil: {"left":..,"right":..}).
type Join struct {
	Kind              JoinKind
	Left, Right       string
	BeforeMs, AfterMs int64
	LeftKey, RightKey func(*Record) ([]byte, error)
	Output            func(*Joined) []byte
	checked           bool
	// The side of the call whose output columns these are: one Source
	// call per batch, not per record.
	sideFor  *columns
	sideSeen byte
}

const (
	joinTag   = 'J'
	leftSide  = 'l'
	rightSide = 'r'
)

// Joins registers j as the transform (the pipeline needs [event-time] and
// output-mode = "append").
func Joins(j *Join) {
	if j.BeforeMs < 0 || j.AfterMs < 0 {
		panic("weir: a join's range is a number of ms >= 0 on each side")
	}
	if j.Left == j.Right {
		panic("weir: a join reads two sources, and both sides are " + strconv.Quote(j.Left))
	}
	FlatMap(j.add)
	OnTimer(j.close)
}

// JSONKey reads top-level JSON member name of the value as a join key (a
// string's characters, another value's JSON text), as a source's key-field
// does.
func JSONKey(name string) func(*Record) ([]byte, error) {
	return func(r *Record) ([]byte, error) {
		v, err := JSONField(r.Value, name)
		if err != nil || !v.Found() {
			return nil, errors.New("no JSON member `" + name + "` to join on")
		}
		if s, ok := v.String(); ok {
			return []byte(s), nil
		}
		return v.Raw, nil
	}
}

func (j *Join) keeps(side byte) bool {
	switch j.Kind {
	case FullOuterJoin:
		return true
	case LeftOuterJoin:
		return side == leftSide
	case RightOuterJoin:
		return side == rightSide
	}
	return false
}

func (j *Join) side() (byte, error) {
	if !j.checked {
		if !EventTime() {
			return 0, Broken("a join needs an [event-time] section: rows leave state when the watermark passes them")
		}
		if QueryOutputMode() != Append {
			return 0, Broken(`a join emits each row once: it needs output-mode = "append"`)
		}
		j.checked = true
	}
	s, ok := Source()
	switch {
	case !ok:
		return 0, Broken("the host did not say which source this batch came from")
	case s == j.Left:
		return leftSide, nil
	case s == j.Right:
		return rightSide, nil
	}
	return 0, Broken("a record from source `" + s + "`, which this join does not read: it joins `" + j.Left +
		"` with `" + j.Right + "` (check the [[source]] names)")
}

func joinPrefix(side byte, key []byte) []byte {
	p := append([]byte{joinTag, side}, binary.BigEndian.AppendUint32(nil, uint32(len(key)))...)
	return append(p, key...)
}

// parseRow is a row state key's side, join key and time.
func parseRow(k []byte) (byte, []byte, int64, bool) {
	if len(k) < 6 || k[0] != joinTag || (k[1] != leftSide && k[1] != rightSide) {
		return 0, nil, 0, false
	}
	n := int(binary.BigEndian.Uint32(k[2:6]))
	if len(k) < 14+n {
		return 0, nil, 0, false
	}
	return k[1], k[6 : 6+n], untime(k[6+n : 14+n]), true
}

func (j *Join) add(r *Record, out *Output) error {
	if out.c != j.sideFor {
		side, err := j.side()
		if err != nil {
			return err
		}
		j.sideFor, j.sideSeen = out.c, side
	}
	side := j.sideSeen
	var err error
	keyOf := j.LeftKey
	if side == rightSide {
		keyOf = j.RightKey
	}
	var key []byte
	if keyOf == nil {
		if !r.HasKey {
			return errors.New("record has no key to join on")
		}
		key = r.Key
	} else if key, err = keyOf(r); err != nil {
		return err
	}
	key = append([]byte{}, key...)
	ts := r.Timestamp
	// The other side's times this row matches; once the watermark passes
	// hi no row to come can match, and the row leaves state.
	lo, hi, other := ts-j.BeforeMs, ts+j.AfterMs, byte(rightSide)
	if side == rightSide {
		lo, hi, other = ts-j.AfterMs, ts+j.BeforeMs, leftSide
	}
	mark := j.keeps(other)
	p := joinPrefix(other, key)
	matched := false
	for _, e := range StateScan(timeBytes(append([]byte{}, p...), lo), timeBytes(append([]byte{}, p...), hi+1)) {
		_, _, ots, ok := parseRow(e.Key)
		if !ok || len(e.Value) == 0 {
			continue
		}
		matched = true
		mine, theirs := &JoinRow{r.Value, ts}, &JoinRow{e.Value[1:], ots}
		if side == leftSide {
			j.emit(out, key, mine, theirs, max(ts, ots))
		} else {
			j.emit(out, key, theirs, mine, max(ts, ots))
		}
		if mark && e.Value[0] != 1 {
			StatePut(e.Key, append([]byte{1}, e.Value[1:]...))
		}
	}
	own := timeBytes(joinPrefix(side, key), ts)
	own = binary.BigEndian.AppendUint32(own, r.Partition)
	own = timeBytes(own, r.Offset)
	flag := byte(0)
	if matched {
		flag = 1
	}
	StatePut(own, append([]byte{flag}, r.Value...))
	RegisterTimer(true, own, hi+1)
	return nil
}

func (j *Join) emit(out *Output, key []byte, left, right *JoinRow, ts int64) {
	jd := &Joined{Key: key, Left: left, Right: right}
	var v []byte
	if j.Output != nil {
		v = j.Output(jd)
	} else {
		v = defaultJoinOutput(jd)
	}
	out.EmitRecord(OutputRecord{Key: key, HasKey: true, Value: v, HasValue: true, Timestamp: ts, HasTimestamp: true})
}

func defaultJoinOutput(j *Joined) []byte {
	side := func(r *JoinRow) []byte {
		if r == nil {
			return []byte("null")
		}
		return r.Value
	}
	out := append([]byte(`{"left":`), side(j.Left)...)
	out = append(append(out, `,"right":`...), side(j.Right)...)
	return append(out, '}')
}

// close drops a row whose time is up, emitting it first when it matched
// nothing and its side is kept.
func (j *Join) close(t *Timer, out *Output) error {
	side, key, ts, ok := parseRow(t.Key)
	if !t.EventTime || !ok {
		return Broken("unexpected timer at " + strconv.FormatInt(t.Time, 10))
	}
	if j.keeps(side) {
		if v, ok := StateGet(t.Key); ok && len(v) > 0 && v[0] != 1 {
			row := &JoinRow{v[1:], ts}
			if side == leftSide {
				j.emit(out, key, row, nil, ts)
			} else {
				j.emit(out, key, nil, row, ts)
			}
		}
	}
	StateDelete(t.Key)
	return nil
}
