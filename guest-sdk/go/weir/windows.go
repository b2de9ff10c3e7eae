package weir

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Event-time windows with user aggregates, with the Rust SDK's semantics
// (weir_guest::window): tumbling, sliding and session windows over a
// per-record key, kept in keyed state and emitted by the pipeline's
// output-mode:
//   - append: each window once, when the watermark passes its end (needs
//     [event-time]), then its state is dropped;
//   - update: every window a batch changed, once after the batch's records;
//     state is dropped when the watermark passes the window;
//   - complete: every window with every batch; state is never dropped.
//
// Outputs carry the window's key, and its last millisecond (end - 1) as
// timestamp. Accumulators are kept as JSON.
//
//	func init() {
//		weir.Windows(weir.Tumbling(10_000, weir.Count{}, byKey))
//	}

// Aggregate folds records into an accumulator (JSON-serializable).
type Aggregate[A any] interface {
	Zero() A
	Add(acc A, r *Record) (A, error)
	Merge(a, b A) A
	Result(key []byte, start, end int64, acc A) []byte
}

// Count counts records; it emits {"key":..,"start":..,"end":..,"count":..}.
type Count struct{}

func (Count) Zero() int64                             { return 0 }
func (Count) Add(acc int64, _ *Record) (int64, error) { return acc + 1, nil }
func (Count) Merge(a, b int64) int64                  { return a + b }
func (Count) Result(key []byte, start, end int64, acc int64) []byte {
	return []byte(`{"key":` + JSONString(key) + `,"start":` + strconv.FormatInt(start, 10) + `,"end":` +
		strconv.FormatInt(end, 10) + `,"count":` + strconv.FormatInt(acc, 10) + `}`)
}

// JSONString is key (lossy UTF-8) as a JSON string literal, escaped as the
// Rust SDK escapes it (quotes, backslashes, control characters).
func JSONString(key []byte) string {
	out := []byte{'"'}
	for len(key) > 0 {
		c, n := utf8.DecodeRune(key)
		key = key[n:]
		switch {
		case c == '"':
			out = append(out, '\\', '"')
		case c == '\\':
			out = append(out, '\\', '\\')
		case c < 0x20:
			out = append(out, []byte("\\u00")...)
			out = append(out, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			out = utf8.AppendRune(out, c)
		}
	}
	return string(append(out, '"'))
}

const (
	fixedTag   = 'W'
	sessionTag = 'S'
)

func timeBytes(b []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
}

func untime(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// Windowed is a windowed aggregation; make one with Tumbling, Sliding or
// Session and register it with Windows.
type Windowed[A any] struct {
	agg              Aggregate[A]
	keyBy            func(*Record) ([]byte, error)
	size, slide, gap int64
	checked          bool
	// Update mode: the windows this batch changed, with the last record
	// that changed each (their outputs' origin).
	touched map[string]uint32
}

// Tumbling windows sizeMs long, one after another, per key keyBy returns.
func Tumbling[A any](sizeMs int64, agg Aggregate[A], keyBy func(*Record) ([]byte, error)) *Windowed[A] {
	return &Windowed[A]{agg: agg, keyBy: keyBy, size: sizeMs, slide: sizeMs}
}

// Sliding windows sizeMs long starting every slideMs.
func Sliding[A any](sizeMs, slideMs int64, agg Aggregate[A], keyBy func(*Record) ([]byte, error)) *Windowed[A] {
	return &Windowed[A]{agg: agg, keyBy: keyBy, size: sizeMs, slide: slideMs}
}

// Session windows: a key's records closer than gapMs form one session.
func Session[A any](gapMs int64, agg Aggregate[A], keyBy func(*Record) ([]byte, error)) *Windowed[A] {
	return &Windowed[A]{agg: agg, keyBy: keyBy, gap: gapMs}
}

// Resize sets the size (and slide) of tumbling windows, e.g. from the
// config in an OnInit function.
func (w *Windowed[A]) Resize(sizeMs int64) {
	if w.gap == 0 && w.size == w.slide {
		w.size, w.slide = sizeMs, sizeMs
	}
}

// Windows registers w as the transform (append and update modes: the
// pipeline needs [event-time]).
func Windows[A any](w *Windowed[A]) {
	if (w.gap == 0 && (w.size < 1 || w.slide < 1)) || w.gap < 0 {
		panic("weir: window sizes are positive numbers of ms")
	}
	w.touched = map[string]uint32{}
	FlatMap(w.add)
	OnTimer(w.close)
	afterBatchF = w.afterBatch
}

func (w *Windowed[A]) tag() byte {
	if w.gap == 0 {
		return fixedTag
	}
	return sessionTag
}

type session[A any] struct {
	Start, End int64
	Acc        A
}

func (w *Windowed[A]) add(r *Record, out *Output) error {
	mode := QueryOutputMode()
	if !w.checked {
		if mode != Complete && !EventTime() {
			return Broken("windowed aggregation in " + mode.String() + " mode needs an [event-time] section: " +
				"windows close when the watermark passes them")
		}
		w.checked = true
	}
	timers := mode != Complete
	key, err := w.keyBy(r)
	if err != nil {
		return err
	}
	ts := r.Timestamp
	if w.gap == 0 {
		type update struct {
			skey  []byte
			acc   A
			fresh bool
			end   int64
		}
		var updates []update
		for start := ts - ((ts%w.slide)+w.slide)%w.slide; start+w.size > ts; start -= w.slide {
			skey := append(timeBytes(timeBytes([]byte{fixedTag}, start), start+w.size), key...)
			acc, fresh := w.agg.Zero(), true
			if v, ok := StateGet(skey); ok {
				if err := json.Unmarshal(v, &acc); err != nil {
					return Broken("window state: " + err.Error())
				}
				fresh = false
			}
			acc, err = w.agg.Add(acc, r)
			if err != nil {
				return err
			}
			updates = append(updates, update{skey, acc, fresh, start + w.size})
		}
		for _, u := range updates {
			v, _ := json.Marshal(u.acc)
			StatePut(u.skey, v)
			if u.fresh && timers {
				RegisterTimer(true, u.skey, u.end)
			}
			w.touch(mode, u.skey, out.origin)
		}
		return nil
	}
	skey := append([]byte{sessionTag}, key...)
	var sessions []session[A]
	if v, ok := StateGet(skey); ok {
		if err := json.Unmarshal(v, &sessions); err != nil {
			return Broken("window state: " + err.Error())
		}
	}
	added, err := w.agg.Add(w.agg.Zero(), r)
	if err != nil {
		return err
	}
	// Sessions the record bridges merge in start order, its own part last.
	merged := session[A]{ts, ts + w.gap, w.agg.Zero()}
	var kept []session[A]
	for _, s := range sessions {
		if s.Start <= ts+w.gap && ts <= s.End {
			if timers {
				DeleteTimer(true, skey, s.End)
			}
			merged = session[A]{min(merged.Start, s.Start), max(merged.End, s.End), w.agg.Merge(merged.Acc, s.Acc)}
		} else {
			kept = append(kept, s)
		}
	}
	merged.Acc = w.agg.Merge(merged.Acc, added)
	if timers {
		RegisterTimer(true, skey, merged.End)
	}
	kept = append(kept, merged)
	sort.Slice(kept, func(i, j int) bool { return kept[i].Start < kept[j].Start })
	v, _ := json.Marshal(kept)
	StatePut(skey, v)
	w.touch(mode, skey, out.origin)
	return nil
}

func (w *Windowed[A]) touch(mode OutputMode, skey []byte, origin uint32) {
	if mode == Update {
		w.touched[string(skey)] = origin
	}
}

// afterBatch emits what update and complete modes emit after a batch of n
// records: the windows it changed, or every window.
func (w *Windowed[A]) afterBatch(out *Output, n int) error {
	switch QueryOutputMode() {
	case Update:
		type change struct {
			origin uint32
			skey   string
		}
		changes := make([]change, 0, len(w.touched))
		for k, i := range w.touched {
			changes = append(changes, change{i, k})
		}
		clear(w.touched)
		sort.Slice(changes, func(i, j int) bool {
			a, b := changes[i], changes[j]
			return a.origin < b.origin || a.origin == b.origin && a.skey < b.skey
		})
		for _, c := range changes {
			out.origin = c.origin
			if err := w.emitStored(out, []byte(c.skey), nil); err != nil {
				return err
			}
		}
	case Complete:
		for j, e := range StateScanPrefix([]byte{w.tag()}) {
			out.origin = uint32(min(j, n-1))
			if err := w.emitValue(out, e.Key, e.Value, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *Windowed[A]) emit(out *Output, key []byte, start, end int64, acc A) {
	out.EmitRecord(OutputRecord{Key: key, HasKey: true, Value: w.agg.Result(key, start, end, acc),
		HasValue: true, Timestamp: end - 1, HasTimestamp: true})
}

func (w *Windowed[A]) close(t *Timer, out *Output) error {
	if !t.EventTime || len(t.Key) == 0 || t.Key[0] != w.tag() {
		return Broken("unexpected timer at " + strconv.FormatInt(t.Time, 10))
	}
	if w.gap == 0 {
		if QueryOutputMode() == Append {
			if err := w.emitStored(out, t.Key, nil); err != nil {
				return err
			}
		}
		StateDelete(t.Key)
		return nil
	}
	upto, ok := Watermark()
	if !ok {
		upto = t.Time
	}
	return w.emitStored(out, t.Key, &upto)
}

// emitStored emits the windows stored under skey; with closeUpto, only the
// sessions ending by then (in append mode; dropped otherwise), keeping the
// rest.
func (w *Windowed[A]) emitStored(out *Output, skey []byte, closeUpto *int64) error {
	v, ok := StateGet(skey)
	if !ok {
		return nil
	}
	return w.emitValue(out, skey, v, closeUpto)
}

func (w *Windowed[A]) emitValue(out *Output, skey, v []byte, closeUpto *int64) error {
	if skey[0] == fixedTag && len(skey) >= 17 {
		var acc A
		if err := json.Unmarshal(v, &acc); err != nil {
			return Broken("window state: " + err.Error())
		}
		w.emit(out, skey[17:], untime(skey[1:9]), untime(skey[9:17]), acc)
		return nil
	}
	if skey[0] != sessionTag {
		return errors.New("a state key that is not a window's")
	}
	var sessions, open []session[A]
	if err := json.Unmarshal(v, &sessions); err != nil {
		return Broken("window state: " + err.Error())
	}
	appendMode := QueryOutputMode() == Append
	for _, s := range sessions {
		switch {
		case closeUpto != nil && s.End > *closeUpto:
			open = append(open, s)
		case closeUpto != nil && !appendMode:
		default:
			w.emit(out, skey[1:], s.Start, s.End, s.Acc)
		}
	}
	if closeUpto == nil {
		return nil
	}
	if len(open) == 0 {
		StateDelete(skey)
	} else {
		v, _ := json.Marshal(open)
		StatePut(skey, v)
	}
	return nil
}
