// The filter-and-flag as a newcomer first writes it in Go: each record
// decoded by encoding/json into a map, changed, encoded again.
package main

import (
	"encoding/json"
	"errors"

	"example.com/golden/weir"
)

func filterAndFlag(r *weir.Record, out *weir.Output) error {
	var order map[string]any
	if err := json.Unmarshal(r.Value, &order); err != nil {
		return err
	}
	amount, ok := order["amount"].(float64)
	if !ok {
		return errors.New("amount is not a number")
	}
	if amount < 10 {
		return nil
	}
	if amount >= 1000 {
		order["big"] = true
	}
	encoded, err := json.Marshal(order)
	if err != nil {
		return err
	}
	out.Emit(encoded)
	return nil
}

func init() { weir.FlatMap(filterAndFlag) }

func main() {}
