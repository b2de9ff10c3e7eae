// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s; e.g. size = "1s") with the
// SDK's window helper; each window's count is emitted once, when the
// watermark passes its end, as {"key":"user-1","start":0,"end":10000,"count":42}
// keyed by the key. The Rust `window-count` example does the same (the
// golden suite checks they agree). The pipeline needs [event-time] and
// [state] key-field = "key". `weir new --lang go --template window
// NAME` starts a project from this file (with NAME's module path).
package main

import (
	"encoding/json"
	"errors"
	"time"

	"example.com/golden/weir"
)

var size int64 = 10_000

func byKey(r *weir.Record) ([]byte, error) {
	var doc struct {
		Key *string `json:"key"`
	}
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		return nil, err
	}
	if doc.Key == nil {
		return nil, errors.New("no string field key")
	}
	return []byte(*doc.Key), nil
}

// windows is built at init, when the config says how large windows are.
var windows = weir.Tumbling(size, weir.Count{}, byKey)

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
			windows.Resize(d.Milliseconds())
		}
		return nil
	})
	weir.Windows(windows)
}

func main() {}
