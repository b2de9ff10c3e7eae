package weir

// Output is where a FlatMap function writes the outputs of one record.
// Emit and Forward keep the input record's key, headers and timestamp;
// EmitRecord sets them.
type Output struct {
	c      *columns
	r      *Record
	origin uint32
}

// Record is the input record this output belongs to.
func (o *Output) Record() *Record { return o.r }

// Emit emits value to the default output.
func (o *Output) Emit(value []byte) { o.EmitTo("", value) }

// EmitTo emits value to the named output ("" is the default output).
func (o *Output) EmitTo(output string, value []byte) {
	o.push(output, o.r.Key, o.r.HasKey, value, true, o.r.Headers, 0, false)
}

// EmitTombstone emits a record without a value (it deletes its key from a
// compacted Kafka topic).
func (o *Output) EmitTombstone() {
	o.push("", o.r.Key, o.r.HasKey, nil, false, o.r.Headers, 0, false)
}

// Forward passes the input record through unchanged.
func (o *Output) Forward() { o.ForwardTo("") }

// ForwardTo passes the input record through unchanged to the named output.
func (o *Output) ForwardTo(output string) {
	o.push(output, o.r.Key, o.r.HasKey, o.r.Value, o.r.HasValue, o.r.Headers, 0, false)
}

// EmitRecord emits a record with every field given.
func (o *Output) EmitRecord(r OutputRecord) {
	name := ""
	if r.Output != nil {
		name = *r.Output
	}
	o.push(name, r.Key, r.HasKey, r.Value, r.HasValue, r.Headers, r.Timestamp, r.HasTimestamp)
}

func (o *Output) push(output string, key []byte, hasKey bool, value []byte, hasValue bool,
	headers []Header, ts int64, hasTS bool) {
	c := o.c
	if c.perRecord {
		rec := OutputRecord{Key: key, HasKey: hasKey, Value: value, HasValue: hasValue,
			Headers: headers, Timestamp: ts, HasTimestamp: hasTS}
		if output != "" {
			rec.Output = &output
		}
		c.records = append(c.records, rec)
		return
	}
	c.push(o.origin, output, key, hasKey, value, hasValue, headers, ts, hasTS)
}
