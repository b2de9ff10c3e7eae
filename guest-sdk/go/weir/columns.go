package weir

// columns builds the output of one call under the contract's rules
// (wit/transform.wit): an optional column stays empty while every record
// has its default there, and is back-filled at the first record that
// differs.
type columns struct {
	out     OutputBatch
	inputs  int
	inOrder bool
	// Per output record index: an explicit timestamp.
	explicit map[int]int64
	// The per-record call collects whole records instead.
	perRecord bool
	records   []OutputRecord
}

func newColumns(inputs, bytes int) *columns {
	return &columns{
		out:     OutputBatch{Values: make([]byte, 0, bytes), ValueEnds: make([]uint32, 0, inputs)},
		inputs:  inputs,
		inOrder: true,
	}
}

type mark struct{ n, values, keys, headers int }

func (c *columns) mark() mark {
	return mark{len(c.out.ValueEnds), len(c.out.Values), len(c.out.Keys), len(c.out.Headers)}
}

func truncate[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// rollback drops what a refused record emitted.
func (c *columns) rollback(m mark) {
	o := &c.out
	o.Values, o.ValueEnds, o.HasValue = o.Values[:m.values], truncate(o.ValueEnds, m.n), truncate(o.HasValue, m.n)
	o.Keys, o.KeyEnds, o.HasKey = o.Keys[:m.keys], truncate(o.KeyEnds, m.n), truncate(o.HasKey, m.n)
	o.Headers, o.HeaderEnds = o.Headers[:m.headers], truncate(o.HeaderEnds, m.n)
	o.Origins, o.Routes = truncate(o.Origins, m.n), truncate(o.Routes, m.n)
	for k := range c.explicit {
		if k >= m.n {
			delete(c.explicit, k)
		}
	}
	c.inOrder = true
	for i, origin := range o.Origins {
		c.inOrder = c.inOrder && int(origin) == i
	}
}

func fill[T any](s []T, n int, v T) []T {
	for len(s) < n {
		s = append(s, v)
	}
	return s
}

func (c *columns) push(origin uint32, output string, key []byte, hasKey bool, value []byte,
	hasValue bool, headers []Header, ts int64, hasTS bool) {
	o := &c.out
	n := len(o.ValueEnds)
	if !hasValue || len(o.HasValue) > 0 {
		o.HasValue = append(fill(o.HasValue, n, true), hasValue)
	}
	if hasValue {
		o.Values = append(o.Values, value...)
	}
	o.ValueEnds = append(o.ValueEnds, uint32(len(o.Values)))
	if hasKey || len(o.KeyEnds) > 0 {
		o.KeyEnds = fill(o.KeyEnds, n, uint32(len(o.Keys)))
		o.HasKey = fill(o.HasKey, n, false)
		o.Keys = append(o.Keys, key...)
		o.KeyEnds = append(o.KeyEnds, uint32(len(o.Keys)))
		o.HasKey = append(o.HasKey, hasKey)
	}
	if len(headers) > 0 || len(o.HeaderEnds) > 0 {
		o.HeaderEnds = fill(o.HeaderEnds, n, uint32(len(o.Headers)))
		o.Headers = append(o.Headers, headers...)
		o.HeaderEnds = append(o.HeaderEnds, uint32(len(o.Headers)))
	}
	if hasTS {
		if c.explicit == nil {
			c.explicit = map[int]int64{}
		}
		c.explicit[n] = ts
	}
	c.inOrder = c.inOrder && int(origin) == n
	o.Origins = append(o.Origins, origin)
	route := uint32(0)
	if output != "" {
		for k, name := range o.Outputs {
			if name == output {
				route = uint32(k + 1)
			}
		}
		if route == 0 {
			o.Outputs = append(o.Outputs, output)
			route = uint32(len(o.Outputs))
		}
	}
	if route != 0 || len(o.Routes) > 0 {
		o.Routes = append(fill(o.Routes, n, 0), route)
	}
}

// finish resolves the timestamp and origin columns.
func (c *columns) finish(inputTimestamps []int64) *OutputBatch {
	o := &c.out
	if len(c.explicit) > 0 {
		o.Timestamps = make([]int64, len(o.Origins))
		for i, origin := range o.Origins {
			o.Timestamps[i] = inputTimestamps[origin]
		}
		for i, t := range c.explicit {
			o.Timestamps[i] = t
		}
	}
	if c.inOrder && len(o.Origins) == c.inputs {
		o.Origins = nil
	}
	return o
}
