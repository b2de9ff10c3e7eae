// Keeps JSON records whose `amount` is a number above 100; a value that is
// not a JSON object is a bad record. The Rust `json-filter` example with
// field = "amount", op = "gt", value = "100" does the same (the golden suite
// checks they agree). Build: copy over the main.go of a `weir new --lang go`
// project named golden, then `weir build`.
package main

import (
	"encoding/json"

	"example.com/golden/weir"
)

func big(r *weir.Record) (bool, error) {
	var doc struct {
		Amount any `json:"amount"`
	}
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		return false, err
	}
	n, ok := doc.Amount.(float64)
	return ok && n > 100, nil
}

func init() { weir.Filter(big) }

func main() {}
