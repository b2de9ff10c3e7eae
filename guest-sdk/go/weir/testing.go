package weir

// Natively (go test), Run pushes records through the registered function
// with the same loop and column rules the component uses.

// In is one input record for a test; Tombstone makes it one without a value.
type In struct {
	Value     string
	Key       *string
	Tombstone bool
	Headers   []Header
	Timestamp int64
}

// Out is one output record of Run.
type Out struct {
	Value     string
	HasValue  bool
	Key       *string
	Headers   []Header
	Timestamp int64
	Output    string // "" for the default output
	Origin    uint32
}

// Run inits the registered transform with config and runs records as one
// batch; it returns the outputs, the rejected records' (index, reason) and
// an error for a refused config or a broken transform.
func Run(records []In, config ...[2]string) ([]Out, []BadRecord, error) {
	if impl == nil {
		return nil, nil, Broken("no transform registered: call weir.Map, Filter, FlatMap or Route from init")
	}
	if err := impl.Init(config); err != nil {
		return nil, nil, err
	}
	b := &Batch{}
	anyKey, anyTomb := false, false
	for i, r := range records {
		b.Values = append(b.Values, r.Value...)
		b.ValueEnds = append(b.ValueEnds, uint32(len(b.Values)))
		b.HasValue = append(b.HasValue, !r.Tombstone)
		anyTomb = anyTomb || r.Tombstone
		if r.Key != nil {
			b.Keys = append(b.Keys, *r.Key...)
			anyKey = true
		}
		b.KeyEnds = append(b.KeyEnds, uint32(len(b.Keys)))
		b.HasKey = append(b.HasKey, r.Key != nil)
		b.Headers = append(b.Headers, r.Headers...)
		b.HeaderEnds = append(b.HeaderEnds, uint32(len(b.Headers)))
		b.Timestamps = append(b.Timestamps, r.Timestamp)
		b.Offsets = append(b.Offsets, firstOffset()+int64(i))
	}
	if !anyTomb {
		b.HasValue = nil
	}
	if !anyKey {
		b.KeyEnds, b.HasKey = nil, nil
	}
	if len(b.Headers) == 0 {
		b.HeaderEnds = nil
	}
	o, err := impl.ProcessBatch(b)
	if err != nil {
		return nil, nil, err
	}
	return outs(o, b.Timestamps), o.Rejected, nil
}

// outs lists an output batch's records; inputTimestamps resolves inherited
// timestamps.
func outs(o *OutputBatch, inputTimestamps []int64) []Out {
	var list []Out
	for i, end := range o.ValueEnds {
		origin := uint32(i)
		if len(o.Origins) > 0 {
			origin = o.Origins[i]
		}
		out := Out{Value: string(o.Values[span(o.ValueEnds, i):end]), HasValue: len(o.HasValue) == 0 || o.HasValue[i],
			Timestamp: inputTimestamps[origin], Origin: origin}
		if len(o.Timestamps) > 0 {
			out.Timestamp = o.Timestamps[i]
		}
		if len(o.KeyEnds) > 0 && o.HasKey[i] {
			k := string(o.Keys[span(o.KeyEnds, i):o.KeyEnds[i]])
			out.Key = &k
		}
		if len(o.HeaderEnds) > 0 {
			out.Headers = o.Headers[span(o.HeaderEnds, i):o.HeaderEnds[i]]
		}
		if len(o.Routes) > 0 && o.Routes[i] > 0 {
			out.Output = o.Outputs[o.Routes[i]-1]
		}
		list = append(list, out)
	}
	return list
}

// Reset forgets the registered transform (tests register several).
func Reset() {
	impl = nil
	initF = nil
	onTimerF = nil
	afterBatchF = nil
}
