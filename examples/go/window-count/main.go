// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s; e.g. size = "1s"), in keyed
// state; each window's count is emitted once, when the watermark passes
// its end, as {"key":"user-1","start":0,"end":10000,"count":42} keyed by
// the key. The Rust `window-count` example does the same (the golden suite
// checks they agree). The pipeline needs [event-time] and [state]
// key-field = "key". Build: copy over the main.go of a `weir new --lang go`
// project named golden, then `weir build`.
package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"example.com/golden/weir"
)

var size int64 = 10_000

// slot is the state key of key's window starting at start.
func slot(key []byte, start int64) []byte {
	return strconv.AppendInt(append(append([]byte{}, key...), 0), start, 10)
}

func stored(k []byte) int64 {
	v, _ := weir.StateGet(k)
	n, _ := strconv.ParseInt(string(v), 10, 64)
	return n
}

func count(r *weir.Record, out *weir.Output) error {
	var doc struct {
		Key *string `json:"key"`
	}
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		return err
	}
	if doc.Key == nil {
		return errors.New("no string field key")
	}
	key := []byte(*doc.Key)
	start := r.Timestamp - ((r.Timestamp%size)+size)%size
	weir.StatePut(slot(key, start), strconv.AppendInt(nil, stored(slot(key, start))+1, 10))
	weir.RegisterTimer(true, key, start+size)
	return nil
}

func closeWindow(t *weir.Timer, out *weir.Output) error {
	start := t.Time - size
	n := stored(slot(t.Key, start))
	weir.StateDelete(slot(t.Key, start))
	key, _ := json.Marshal(string(t.Key))
	out.Emit([]byte(`{"key":` + string(key) + `,"start":` + strconv.FormatInt(start, 10) +
		`,"end":` + strconv.FormatInt(t.Time, 10) + `,"count":` + strconv.FormatInt(n, 10) + `}`))
	return nil
}

func init() {
	weir.OnInit(func(c weir.Config) error {
		if err := c.Only("size"); err != nil {
			return err
		}
		if v, ok := c["size"]; ok {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Millisecond {
				return errors.New("size: not a duration (e.g. 500ms, 10s, 2m)")
			}
			size = d.Milliseconds()
		}
		return nil
	})
	weir.FlatMap(count)
	weir.OnTimer(closeWindow)
}

func main() {}
