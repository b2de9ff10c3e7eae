// Keeps JSON records whose `amount` is a number above 100; a value that is
// not a JSON object is a bad record. The Rust `json-filter` example with
// field = "amount", op = "gt", value = "100" does the same (the golden suite
// checks they agree). Build: copy over the main.go of a `weir new --lang go`
// project named golden, then `weir build`.
package main

import "example.com/golden/weir"

// big reads only `amount` (weir.JSONField skips the members before it and
// stops there) instead of decoding the whole record with encoding/json.
func big(r *weir.Record) (bool, error) {
	amount, err := weir.JSONField(r.Value, "amount")
	if err != nil {
		return false, err
	}
	n, ok := amount.Number()
	return ok && n > 100, nil
}

func init() { weir.Filter(big) }

func main() {}
