//go:build wasip1

// Routes JSON records to the named output `eu` or `us` by their `region`
// field; other regions and records without one go to the default output; a
// value that is not a JSON object is a bad record. The Rust `router`
// example with field = "region", route.eu = "eu", route.us = "us",
// strict = "true" does the same. Build: copy over the main.go of a
// `weir new --lang go` project, then `weir build`. Go has no SDK layer yet:
// this works on the columnar batch.
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
	Region any `json:"region"`
}

func (transform) ProcessBatch(in *weir.Batch) (*weir.OutputBatch, error) {
	// Routes: 0 is the default output, k is Outputs[k-1].
	out := &weir.OutputBatch{Outputs: []string{"eu", "us"}}
	start := uint32(0)
	for i, end := range in.ValueEnds {
		v := in.Values[start:end]
		start = end
		var d doc
		if err := json.Unmarshal(v, &d); err != nil {
			out.Rejected = append(out.Rejected, weir.BadRecord{Index: uint32(i), Reason: err.Error()})
			continue
		}
		route := uint32(0)
		switch d.Region {
		case "eu":
			route = 1
		case "us":
			route = 2
		}
		out.Values = append(out.Values, v...)
		out.ValueEnds = append(out.ValueEnds, uint32(len(out.Values)))
		out.Origins = append(out.Origins, uint32(i))
		out.Routes = append(out.Routes, route)
	}
	return out, nil
}

func (transform) ProcessRecord(in *weir.Record) ([]weir.OutputRecord, *weir.RecordError) {
	return nil, &weir.RecordError{Broken: true, Msg: `this transform runs with call = "batch" only`}
}

func init() { weir.SetTransform(transform{}) }

func main() {}
