//go:build !wasip1

package weir

import (
	"sort"
	"strings"
)

// Native stand-ins for keyed state, timers and clocks (go test).

type nativeTimer struct {
	eventTime bool
	at        int64
	key       string
}

var native = struct {
	state          map[string][]byte
	timers         map[nativeTimer]bool
	watermark      int64
	hasWatermark   bool
	processingTime int64
	outputMode     OutputMode
	eventTime      bool
	source         string
	hasSource      bool
	firstOffset    int64
}{state: map[string][]byte{}, timers: map[nativeTimer]bool{}, eventTime: true}

func hostStateGet(key []byte) ([]byte, bool) {
	v, ok := native.state[string(key)]
	return v, ok
}

func hostStatePut(key, value []byte) { native.state[string(key)] = append([]byte{}, value...) }

func hostStateDelete(key []byte) { delete(native.state, string(key)) }

func hostStateScanPrefix(prefix, after []byte, hasAfter bool, limit uint32) []Entry {
	var keys []string
	for k := range native.state {
		if strings.HasPrefix(k, string(prefix)) && (!hasAfter || k > string(after)) {
			keys = append(keys, k)
		}
	}
	return nativeEntries(keys, limit)
}

func hostStateScan(start, end []byte, limit uint32) []Entry {
	var keys []string
	for k := range native.state {
		if k >= string(start) && k < string(end) {
			keys = append(keys, k)
		}
	}
	return nativeEntries(keys, limit)
}

// nativeEntries is the first limit of keys in order, with their values.
func nativeEntries(keys []string, limit uint32) []Entry {
	sort.Strings(keys)
	keys = keys[:min(len(keys), int(limit))]
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = Entry{[]byte(k), append([]byte{}, native.state[k]...)}
	}
	return out
}

func hostSource() (string, bool) { return native.source, native.hasSource }

// RunFrom is Run for a batch of source `source` (what Source says during
// it) at offsets firstOffset on, as the host runs the batches of a join.
func RunFrom(source string, firstOffset int64, records []In, config ...[2]string) ([]Out, []BadRecord, error) {
	native.source, native.hasSource, native.firstOffset = source, true, firstOffset
	defer func() { native.source, native.hasSource, native.firstOffset = "", false, 0 }()
	return Run(records, config...)
}

// firstOffset is where Run numbers its records (RunFrom sets it).
func firstOffset() int64 { return native.firstOffset }

func hostEventTime() bool { return native.eventTime }

// SetEventTime says whether the native pipeline has [event-time]
// (ResetState: true).
func SetEventTime(on bool) { native.eventTime = on }

func hostTimerRegister(eventTime bool, key []byte, at int64) {
	native.timers[nativeTimer{eventTime, at, string(key)}] = true
}

func hostTimerDelete(eventTime bool, key []byte, at int64) {
	delete(native.timers, nativeTimer{eventTime, at, string(key)})
}

func hostWatermark() (int64, bool) { return native.watermark, native.hasWatermark }

func hostProcessingTime() int64 { return native.processingTime }

func hostOutputMode() OutputMode { return native.outputMode }

// SetOutputMode sets the native output mode (ResetState: Append).
func SetOutputMode(m OutputMode) { native.outputMode = m }

// ResetState forgets native state and timers and resets the clocks.
func ResetState() {
	native.state = map[string][]byte{}
	native.timers = map[nativeTimer]bool{}
	native.watermark, native.hasWatermark, native.processingTime = 0, false, 0
	native.outputMode = Append
	native.eventTime = true
}

// FireTimers sets the native watermark, then fires the event-time timers
// it reaches, in time order, through the OnTimer function.
func FireTimers(watermark int64) ([]Out, []BadRecord, error) {
	native.watermark, native.hasWatermark = watermark, true
	var due []nativeTimer
	for t := range native.timers {
		if t.eventTime && t.at <= watermark {
			due = append(due, t)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if due[i].at != due[j].at {
			return due[i].at < due[j].at
		}
		return due[i].key < due[j].key
	})
	var keys []byte
	var ends []uint32
	var times []int64
	var eventTime []bool
	for _, t := range due {
		delete(native.timers, t)
		keys = append(keys, t.key...)
		ends = append(ends, uint32(len(keys)))
		times = append(times, t.at)
		eventTime = append(eventTime, true)
	}
	o, err := runTimers(keys, ends, times, eventTime)
	if err != nil {
		return nil, nil, err
	}
	return outs(o, times), o.Rejected, nil
}
