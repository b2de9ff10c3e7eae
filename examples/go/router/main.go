// Routes JSON records to the named output `eu` or `us` by their `region`
// field; other regions and records without one go to the default output; a
// value that is not a JSON object is a bad record. The Rust `router`
// example with field = "region", route.eu = "eu", route.us = "us",
// strict = "true" does the same. Build: copy over the main.go of a
// `weir new --lang go` project named golden, then `weir build`.
package main

import (
	"encoding/json"

	"example.com/golden/weir"
)

func byRegion(r *weir.Record) (string, error) {
	var doc struct {
		Region any `json:"region"`
	}
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		return "", err
	}
	if doc.Region == "eu" || doc.Region == "us" {
		return doc.Region.(string), nil
	}
	return "", nil
}

func init() { weir.Route(byRegion) }

func main() {}
