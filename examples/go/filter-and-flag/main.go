// Drops orders under 10, flags those of 1000 and more with "big": true; a
// record that is not a JSON object with a number `amount` is refused. The
// way the README teaches: weir.JSONField reads the one field (checking the
// members before it, stopping there); the output is the record's own
// bytes, or them with the flag spliced in before the closing brace. Build:
// copy over the main.go of a `weir new --lang go` project named golden,
// then `weir build`. naive/main.go is the same with encoding/json.
package main

import (
	"bytes"
	"errors"

	"example.com/golden/weir"
)

var flag = []byte(`,"big":true}`)

func filterAndFlag(r *weir.Record, out *weir.Output) error {
	field, err := weir.JSONField(r.Value, "amount")
	if err != nil {
		return err
	}
	amount, ok := field.Number()
	if !ok {
		return errors.New("amount is not a number")
	}
	if amount < 10 {
		return nil
	}
	if amount < 1000 {
		out.Emit(r.Value)
		return nil
	}
	end := bytes.LastIndexByte(r.Value, '}')
	if end < 0 {
		return errors.New("not a JSON object")
	}
	flagged := make([]byte, 0, end+len(flag))
	out.Emit(append(append(flagged, r.Value[:end]...), flag...))
	return nil
}

func init() { weir.FlatMap(filterAndFlag) }

func main() {}
