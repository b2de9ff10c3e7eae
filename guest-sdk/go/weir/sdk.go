package weir

import (
	"errors"
	"strings"
)

// The SDK: a transform is one plain function per record, registered from
// an init function:
//
//	func init() { weir.Map(shout) }
//	func shout(r *weir.Record) ([]byte, error) { return bytes.ToUpper(r.Value), nil }
//
// It runs the per-record loop over weir's columnar batches and builds the
// output columns, so no transform touches the encoding. A function's error
// refuses that record with the error's text as the reason (the pipeline's
// on-error decides its fate), unless it is Broken(...), which stops the
// pipeline.

// Broken is the error that stops the pipeline: the transform cannot go on.
func Broken(msg string) error {
	return &RecordError{Broken: true, Msg: msg}
}

// Config is the pipeline's [transform.config].
type Config map[string]string

// Only refuses keys other than keys (catches typos).
func (c Config) Only(keys ...string) error {
	for k := range c {
		known := false
		for _, want := range keys {
			known = known || k == want
		}
		if !known {
			return errors.New("unknown config key `" + k + "` (known: " + strings.Join(keys, ", ") + ")")
		}
	}
	return nil
}

type kind int

const (
	kindMap kind = iota
	kindFilter
	kindFlatMap
	kindRoute
)

type sdk struct {
	kind    kind
	mapF    func(*Record) ([]byte, error)
	filterF func(*Record) (bool, error)
	flatF   func(*Record, *Output) error
	routeF  func(*Record) (string, error)
}

var initF func(Config) error

// afterBatchF, when set (by Windows), runs after a batch's records with
// the batch's output and its record count; its error is Broken.
var afterBatchF func(out *Output, n int) error

// Map registers f: one output per input with the value f returns, keeping
// key, headers and timestamp. A record without a value (a tombstone)
// passes through without calling f.
func Map(f func(r *Record) ([]byte, error)) { register(&sdk{kind: kindMap, mapF: f}) }

// Filter registers f: records for which it returns true pass through
// unchanged (tombstones too: their HasValue is false).
func Filter(f func(r *Record) (bool, error)) { register(&sdk{kind: kindFilter, filterF: f}) }

// FlatMap registers f: it emits zero or more records through out.
func FlatMap(f func(r *Record, out *Output) error) { register(&sdk{kind: kindFlatMap, flatF: f}) }

// Route registers f: the record passes through unchanged to the named
// output f returns, or to the default output for "".
func Route(f func(r *Record) (string, error)) { register(&sdk{kind: kindRoute, routeF: f}) }

// OnInit registers f, called once before any record with the pipeline's
// config; its error refuses the config (say which key and why).
func OnInit(f func(Config) error) { initF = f }

func register(s *sdk) {
	if _, ok := impl.(*sdk); ok {
		panic("weir: a transform registers one function")
	}
	impl = s
}

func (s *sdk) Init(config [][2]string) error {
	c := Config{}
	for _, kv := range config {
		c[kv[0]] = kv[1]
	}
	if initF != nil {
		return initF(c)
	}
	if len(config) > 0 {
		return errors.New("unknown config key `" + config[0][0] + "`: this transform takes no config")
	}
	return nil
}

// run applies the registered function to r, writing to out.
func (s *sdk) run(r *Record, out *Output) error {
	switch s.kind {
	case kindMap:
		if !r.HasValue {
			out.Forward()
			return nil
		}
		v, err := s.mapF(r)
		if err != nil {
			return err
		}
		out.Emit(v)
	case kindFilter:
		keep, err := s.filterF(r)
		if err != nil {
			return err
		}
		if keep {
			out.Forward()
		}
	case kindRoute:
		to, err := s.routeF(r)
		if err != nil {
			return err
		}
		out.ForwardTo(to)
	default:
		return s.flatF(r, out)
	}
	return nil
}

func broken(err error) bool {
	var re *RecordError
	return errors.As(err, &re) && re.Broken
}

func (s *sdk) ProcessBatch(in *Batch) (*OutputBatch, error) {
	n := len(in.ValueEnds)
	c := newColumns(n, len(in.Values))
	if (s.kind == kindMap || s.kind == kindFilter) && len(in.KeyEnds) == 0 && len(in.HeaderEnds) == 0 &&
		len(in.HasValue) == 0 {
		return s.plain(in, c)
	}
	out := &Output{c: c}
	var r Record
	start := uint32(0)
	for i, end := range in.ValueEnds {
		in.record(i, start, end, &r)
		start = end
		out.r = &r
		out.origin = uint32(i)
		m := c.mark()
		if err := s.run(&r, out); err != nil {
			if broken(err) {
				return nil, err
			}
			c.rollback(m)
			c.out.Rejected = append(c.out.Rejected, BadRecord{Index: uint32(i), Reason: err.Error()})
		}
	}
	if afterBatchF != nil && n > 0 {
		if err := afterBatchF(out, n); err != nil {
			if !broken(err) {
				err = Broken(err.Error())
			}
			return nil, err
		}
	}
	return c.finish(in.Timestamps), nil
}

// plain maps or filters a batch without keys, headers or tombstones:
// outputs need only values (the common case, without the general push's
// checks). While every output so far is its input record's own bytes, in
// order (an in-place map, a filter that kept everything), nothing is
// copied: if that holds to the end, the output columns are the input's.
func (s *sdk) plain(in *Batch, c *columns) (*OutputBatch, error) {
	o := &c.out
	var r Record
	inPlace := true
	// The outputs so far were records 0..i-1 as they are: write them out.
	materialize := func(i int, start uint32) {
		o.Values = append(o.Values, in.Values[:start]...)
		o.ValueEnds = append(o.ValueEnds, in.ValueEnds[:i]...)
		for j := range i {
			o.Origins = append(o.Origins, uint32(j))
		}
		inPlace = false
	}
	start := uint32(0)
	for i, end := range in.ValueEnds {
		r = Record{Value: in.Values[start:end:end], HasValue: true, Timestamp: in.Timestamps[i],
			Partition: in.Partition, Offset: in.Offsets[i]}
		own := r.Value
		var v []byte
		var err error
		skip := false
		if s.kind == kindMap {
			v, err = s.mapF(&r)
		} else {
			var keep bool
			keep, err = s.filterF(&r)
			skip = err == nil && !keep
			v = r.Value
		}
		if err != nil && broken(err) {
			return nil, err
		}
		if inPlace {
			if err == nil && !skip && sameBytes(v, own) {
				start = end
				continue
			}
			materialize(i, start)
		}
		start = end
		if skip {
			continue
		}
		if err != nil {
			// Later outputs' origins differ from their positions: finish
			// keeps the origin column.
			o.Rejected = append(o.Rejected, BadRecord{Index: uint32(i), Reason: err.Error()})
			continue
		}
		o.Values = append(o.Values, v...)
		o.ValueEnds = append(o.ValueEnds, uint32(len(o.Values)))
		o.Origins = append(o.Origins, uint32(i))
	}
	if inPlace {
		o.Values, o.ValueEnds = in.Values, in.ValueEnds
	}
	return c.finish(in.Timestamps), nil
}

// sameBytes: v is exactly the memory of own (an output made in place).
func sameBytes(v, own []byte) bool {
	return len(v) == len(own) && (len(v) == 0 || &v[0] == &own[0])
}

func (s *sdk) ProcessRecord(in *Record) ([]OutputRecord, *RecordError) {
	c := &columns{perRecord: true}
	out := &Output{c: c, r: in}
	if err := s.run(in, out); err != nil {
		if broken(err) {
			return nil, err.(*RecordError)
		}
		return nil, &RecordError{Msg: err.Error()}
	}
	return c.records, nil
}

// record fills r with record i (value bytes [start, end)), as views into b.
func (b *Batch) record(i int, start, end uint32, r *Record) {
	r.HasValue = len(b.HasValue) == 0 || b.HasValue[i]
	r.Value = b.Values[start:end:end]
	r.HasKey = len(b.KeyEnds) > 0 && b.HasKey[i]
	r.Key = nil
	if r.HasKey {
		r.Key = b.Keys[span(b.KeyEnds, i):b.KeyEnds[i]]
	}
	r.Headers = nil
	if len(b.HeaderEnds) > 0 {
		r.Headers = b.Headers[span(b.HeaderEnds, i):b.HeaderEnds[i]]
	}
	r.Timestamp = b.Timestamps[i]
	r.Partition = b.Partition
	r.Offset = b.Offsets[i]
}

// span is where record i starts in a column described by ends.
func span(ends []uint32, i int) uint32 {
	if i == 0 {
		return 0
	}
	return ends[i-1]
}
