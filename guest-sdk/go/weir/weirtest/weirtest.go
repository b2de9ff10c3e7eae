//go:build !wasip1

// Package weirtest runs a weir transform natively, under `go test`, as
// net/http/httptest runs a handler: records go through the function
// registered with package weir by the same batch loop and column rules as
// the component, over in-memory stand-ins for keyed state, timers and
// clocks.
//
//	outs, rejected, err := weirtest.Run([]weirtest.In{{Value: "a"}})
//
// `weir new` writes this package into a project's weir/weirtest with the
// import below set to the project's own weir package.
package weirtest

import "weir.dev/guest/weir"

// In is one input record; Tombstone makes it one without a value, and
// Timestamp is its event time in ms.
type In = weir.In

// Out is one output record; Origin is the index of the input record (or
// fired timer) it came from.
type Out = weir.Out

// Rejected is a refused record: its index in the batch and the reason.
type Rejected = weir.BadRecord

// Run inits the registered transform with config (name, value pairs) and
// runs records as one batch: the outputs, the refused records, and an
// error for a refused config or a broken transform.
func Run(records []In, config ...[2]string) ([]Out, []Rejected, error) {
	return weir.Run(records, config...)
}

// RunFrom is Run for a batch of the source named source (what weir.Source
// says during it) at offsets firstOffset on, as the host runs the batches
// of a join.
func RunFrom(source string, firstOffset int64, records []In, config ...[2]string) ([]Out, []Rejected, error) {
	return weir.RunFrom(source, firstOffset, records, config...)
}

// FireTimers sets the watermark, then fires the event-time timers it
// reaches, in time order, through the weir.OnTimer function (windows and
// joins register theirs).
func FireTimers(watermark int64) ([]Out, []Rejected, error) {
	return weir.FireTimers(watermark)
}

// ResetState forgets keyed state and timers and resets the clocks, the
// output mode (Append) and event time (on).
func ResetState() { weir.ResetState() }

// SetOutputMode sets the pipeline's output mode for the next runs.
func SetOutputMode(m weir.OutputMode) { weir.SetOutputMode(m) }

// SetEventTime says whether the pipeline has [event-time].
func SetEventTime(on bool) { weir.SetEventTime(on) }

// Reset forgets the registered transform, for tests that register several.
func Reset() { weir.Reset() }
