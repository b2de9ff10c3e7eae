//go:build wasip1

// Keeps JSON records whose `amount` is a number above 100; a value that is
// not a JSON object is a bad record. The Rust `json-filter` example with
// field = "amount", op = "gt", value = "100" does the same (the golden suite
// checks they agree). Build: copy over the main.go of a `weir new --lang go`
// project, then `weir build`. Go has no SDK layer yet: this works on the
// columnar batch.
package main

import (
	"encoding/json"
	"errors"

	"example.com/golden/weir"
)

type transform struct{}

func (transform) Init(config [][2]string) error {
	if len(config) > 0 {
		return errors.New("this transform takes no config")
	}
	return nil
}

type doc struct {
	Amount any `json:"amount"`
}

func (transform) ProcessBatch(in *weir.Batch) (*weir.OutputBatch, error) {
	out := &weir.OutputBatch{}
	start := uint32(0)
	for i, end := range in.ValueEnds {
		v := in.Values[start:end]
		start = end
		var d doc
		if err := json.Unmarshal(v, &d); err != nil {
			out.Rejected = append(out.Rejected, weir.BadRecord{Index: uint32(i), Reason: err.Error()})
			continue
		}
		if n, ok := d.Amount.(float64); !ok || n <= 100 {
			continue
		}
		out.Values = append(out.Values, v...)
		out.ValueEnds = append(out.ValueEnds, uint32(len(out.Values)))
		out.Origins = append(out.Origins, uint32(i))
	}
	return out, nil
}

func (transform) ProcessRecord(in *weir.Record) ([]weir.OutputRecord, *weir.RecordError) {
	return nil, &weir.RecordError{Broken: true, Msg: `this transform runs with call = "batch" only`}
}

func init() { weir.SetTransform(transform{}) }

func main() {}
