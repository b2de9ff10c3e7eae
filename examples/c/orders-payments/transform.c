// Orders joined with their payments: a stream-stream join of the sources
// `orders` and `payments` on `order_id` with the SDK's join helper, a
// payment matching an order when its time is at most `before` earlier and
// `after` later (defaults 0s and 1m); `join` is inner (default),
// left-outer, right-outer or full-outer. Output: {"order_id","user",
// "amount"}, null for the side an outer row lacks, keyed by the order id.
// The Rust `orders-payments` example does the same (the golden suite
// checks they agree) on flat JSON records. The pipeline needs
// [event-time] (with the payments' own event-time-field) and each
// source's key-field = "order_id". `weir new --lang c --template join
// NAME` starts a project from this file.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

// The raw JSON text of the record's top-level field `name` (a string's
// characters without its quotes), by a plain search: enough for flat
// records without escapes.
static bool field(weir_bytes v, const char *name, weir_bytes *out) {
  char pat[32];
  int n = snprintf(pat, sizeof pat, "\"%s\":", name);
  size_t i = 0;
  while (i + (size_t)n <= v.len && memcmp(v.ptr + i, pat, (size_t)n) != 0) i++;
  if (i + (size_t)n > v.len) return false;
  size_t start = i + (size_t)n, end;
  if (start < v.len && v.ptr[start] == '"') {
    end = ++start;
    while (end < v.len && v.ptr[end] != '"') end++;
  } else {
    end = start;
    while (end < v.len && v.ptr[end] != ',' && v.ptr[end] != '}') end++;
  }
  *out = (weir_bytes){v.ptr + start, end - start};
  return true;
}

static bool order_id(const weir_record *r, weir_bytes *key, weir_output *out) {
  if (field(r->value, "order_id", key)) return true;
  weir_bad(out, "no JSON field order_id to join on");
  return false;
}

static void row(const weir_joined *j, weir_output *out) {
  weir_bytes user = {0}, amount = {0};
  bool has_user = j->left && field(j->left->value, "user", &user);
  bool has_amount = j->right && field(j->right->value, "amount", &amount);
  char v[256];
  int n = snprintf(v, sizeof v, "{\"order_id\":\"%.*s\",\"user\":%s%.*s%s,\"amount\":%.*s}", (int)j->key.len,
                   (const char *)j->key.ptr, has_user ? "\"" : "", has_user ? (int)user.len : 4,
                   has_user ? (const char *)user.ptr : "null", has_user ? "\"" : "", has_amount ? (int)amount.len : 4,
                   has_amount ? (const char *)amount.ptr : "null");
  if (n < 0 || n >= (int)sizeof v) {
    weir_broken(out, "an output row longer than 255 bytes");
    return;
  }
  weir_emit(out, v, (size_t)n);
}

static weir_join join = {
    .left = "orders", .right = "payments", .after_ms = 60000, .left_key = order_id, .right_key = order_id, .output = row};

const char *weir_init(const weir_config *config) {
  static const char *const known[] = {"join", "before", "after", NULL};
  const char *why = weir_config_only(config, known);
  if (why) return why;
  join.kind = WEIR_INNER;
  char *kind = weir_config_get(config, "join");
  if (kind) {
    join.kind = !strcmp(kind, "left-outer")    ? WEIR_LEFT_OUTER
                : !strcmp(kind, "right-outer") ? WEIR_RIGHT_OUTER
                : !strcmp(kind, "full-outer")  ? WEIR_FULL_OUTER
                                               : WEIR_INNER;
    bool known_kind = !strcmp(kind, "inner") || join.kind != WEIR_INNER;
    free(kind);
    if (!known_kind) return "config key `join`: inner, left-outer, right-outer or full-outer";
  }
  why = weir_config_duration_ms(config, "before", 0, &join.before_ms);
  return why ? why : weir_config_duration_ms(config, "after", 60000, &join.after_ms);
}

WEIR_JOIN(join)
