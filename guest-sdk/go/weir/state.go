package weir

// Keyed state, timers and the batch's clocks, for stateful guests: calling
// any of these makes the component import weir's keyed state, so the
// pipeline needs a [state] key (the host routes each key's records to the
// same state). State is checkpointed with every batch or epoch and
// restored exactly after a crash. Natively (go test) it lives in maps, and
// FireTimers fires timers.

// Timer is a fired timer.
type Timer struct {
	Key       []byte
	Time      int64 // ms
	EventTime bool  // false: processing time
}

var onTimerF func(*Timer, *Output) error

// OnTimer registers f, called for each fired timer after the batch's
// records; it emits like a FlatMap function (the timer's key and time are
// the defaults). An error refuses the timer (the pipeline's on-error
// decides), Broken stops the pipeline.
func OnTimer(f func(t *Timer, out *Output) error) { onTimerF = f }

// StateGet is the value stored under key, if any.
func StateGet(key []byte) ([]byte, bool) { return hostStateGet(key) }

// StatePut stores value under key.
func StatePut(key, value []byte) { hostStatePut(key, value) }

// StateDelete removes key.
func StateDelete(key []byte) { hostStateDelete(key) }

// RegisterTimer calls the OnTimer function with key once the watermark
// (eventTime) or the processing time reaches at (ms); registering the same
// timer twice keeps one.
func RegisterTimer(eventTime bool, key []byte, at int64) { hostTimerRegister(eventTime, key, at) }

// DeleteTimer cancels a registered timer.
func DeleteTimer(eventTime bool, key []byte, at int64) { hostTimerDelete(eventTime, key, at) }

// Entry is one key/value pair of a state scan.
type Entry struct{ Key, Value []byte }

// StateScanPrefix is every entry whose key starts with prefix, in
// ascending key order (fetched from the host a page at a time).
func StateScanPrefix(prefix []byte) []Entry {
	const page = 256
	var all []Entry
	var after []byte
	for {
		got := hostStateScanPrefix(prefix, after, all != nil, page)
		all = append(all, got...)
		if len(got) < page {
			return all
		}
		after = got[len(got)-1].Key
	}
}

// StateScan is every entry with start <= key < end, in ascending key order
// (fetched from the host a page at a time).
func StateScan(start, end []byte) []Entry {
	const page = 256
	var all []Entry
	for {
		got := hostStateScan(start, end, page)
		all = append(all, got...)
		if len(got) < page {
			return all
		}
		start = append(append([]byte{}, got[len(got)-1].Key...), 0)
	}
}

// Source is the name of the source whose records the current call holds
// (its [[source]] name, or source-<index>); false while timers fire.
func Source() (string, bool) { return hostSource() }

// EventTime says whether the pipeline has an [event-time] section (so
// event-time timers fire and there is a watermark).
func EventTime() bool { return hostEventTime() }

// Watermark is the batch's event-time watermark (ms); false before any.
func Watermark() (int64, bool) { return hostWatermark() }

// OutputMode is how a stateful pipeline emits results (its output-mode).
type OutputMode uint32

const (
	Append OutputMode = iota
	Update
	Complete
)

func (m OutputMode) String() string {
	switch m {
	case Update:
		return "update"
	case Complete:
		return "complete"
	}
	return "append"
}

// QueryOutputMode is the pipeline's output-mode.
func QueryOutputMode() OutputMode { return hostOutputMode() }

// ProcessingTime is the batch's processing time (ms), the same on a re-run.
func ProcessingTime() int64 { return hostProcessingTime() }

// runTimers runs the OnTimer function over fired timers; output origins
// index the timers.
func runTimers(keys []byte, ends []uint32, times []int64, eventTime []bool) (*OutputBatch, error) {
	if onTimerF == nil {
		return nil, Broken("timers fired but no OnTimer function is registered")
	}
	c := newColumns(len(times), 0)
	out := &Output{c: c}
	var r Record
	start := uint32(0)
	for i, end := range ends {
		// The timer as a record without a value: outputs inherit its key and time.
		r = Record{Key: keys[start:end:end], HasKey: true, Timestamp: times[i], Offset: -1}
		start = end
		out.r, out.origin = &r, uint32(i)
		m := c.mark()
		if err := onTimerF(&Timer{Key: r.Key, Time: times[i], EventTime: eventTime[i]}, out); err != nil {
			if broken(err) {
				return nil, err
			}
			c.rollback(m)
			c.out.Rejected = append(c.out.Rejected, BadRecord{Index: uint32(i), Reason: err.Error()})
		}
	}
	return c.finish(times), nil
}
