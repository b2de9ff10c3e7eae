// Orders joined with their payments: a stream-stream join of the sources
// `orders` and `payments` on `order_id` with the SDK's join helper, a
// payment matching an order when its time is at most `before` earlier and
// `after` later (defaults 0s and 1m); `join` is inner (default),
// left-outer, right-outer or full-outer. Output: {"order_id","user",
// "amount"}, null for the side an outer row lacks, keyed by the order id.
// The Rust `orders-payments` example does the same (the golden suite
// checks they agree). The pipeline needs [event-time] (with the payments'
// own event-time-field) and each source's key-field = "order_id". `weir
// new --lang go --template join NAME` starts a project from this file
// (with NAME's module path).
package main

import (
	"encoding/json"
	"errors"
	"time"

	"example.com/golden/weir"
)

type row struct {
	OrderID string  `json:"order_id"`
	User    *string `json:"user"`
	Amount  *int64  `json:"amount"`
}

func output(j *weir.Joined) []byte {
	out := row{OrderID: string(j.Key)}
	if j.Left != nil {
		var o struct {
			User *string `json:"user"`
		}
		_ = json.Unmarshal(j.Left.Value, &o)
		out.User = o.User
	}
	if j.Right != nil {
		var p struct {
			Amount *int64 `json:"amount"`
		}
		_ = json.Unmarshal(j.Right.Value, &p)
		out.Amount = p.Amount
	}
	v, _ := json.Marshal(out)
	return v
}

var join = &weir.Join{Left: "orders", Right: "payments", AfterMs: 60_000,
	LeftKey: weir.JSONKey("order_id"), RightKey: weir.JSONKey("order_id"), Output: output}

func ms(c weir.Config, key string, d int64) (int64, error) {
	v, ok := c[key]
	if !ok {
		return d, nil
	}
	t, err := time.ParseDuration(v)
	if err != nil || t < 0 {
		return 0, errors.New(key + ": not a duration (e.g. 0s, 500ms, 1m)")
	}
	return t.Milliseconds(), nil
}

func init() {
	weir.OnInit(func(c weir.Config) error {
		if err := c.Only("join", "before", "after"); err != nil {
			return err
		}
		kinds := map[string]weir.JoinKind{"": weir.InnerJoin, "inner": weir.InnerJoin, "left-outer": weir.LeftOuterJoin,
			"right-outer": weir.RightOuterJoin, "full-outer": weir.FullOuterJoin}
		kind, ok := kinds[c["join"]]
		if !ok {
			return errors.New("join: inner, left-outer, right-outer or full-outer")
		}
		var err error
		join.Kind = kind
		if join.BeforeMs, err = ms(c, "before", 0); err != nil {
			return err
		}
		join.AfterMs, err = ms(c, "after", 60_000)
		return err
	})
	weir.Joins(join)
}

func main() {}
