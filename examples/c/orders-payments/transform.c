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

static bool ms(const weir_config *c, const char *key, int64_t *out) {
  char *v = weir_config_get(c, key);
  if (!v) return true;
  char *unit;
  long long n = strtoll(v, &unit, 10);
  int64_t scale = !strcmp(unit, "ms") ? 1 : !strcmp(unit, "s") ? 1000 : !strcmp(unit, "m") ? 60000 : 0;
  free(v);
  if (n < 0 || scale == 0) return false;
  *out = n * scale;
  return true;
}

const char *weir_init(const weir_config *config) {
  static const char *known[] = {"join", "before", "after"};
  for (size_t i = 0; i < config->len; i++) {
    const full_transformer_string_t *k = &config->pairs[i].f0;
    bool ok = false;
    for (size_t j = 0; j < 3; j++) ok = ok || (k->len == strlen(known[j]) && !memcmp(k->ptr, known[j], k->len));
    if (!ok) return "unknown config key (known: join, before, after)";
  }
  join.kind = WEIR_INNER, join.before_ms = 0, join.after_ms = 60000;
  char *kind = weir_config_get(config, "join");
  if (kind) {
    join.kind = !strcmp(kind, "left-outer")    ? WEIR_LEFT_OUTER
                : !strcmp(kind, "right-outer") ? WEIR_RIGHT_OUTER
                : !strcmp(kind, "full-outer")  ? WEIR_FULL_OUTER
                                               : WEIR_INNER;
    bool known = !strcmp(kind, "inner") || join.kind != WEIR_INNER;
    free(kind);
    if (!known) return "join: inner, left-outer, right-outer or full-outer";
  }
  if (!ms(config, "before", &join.before_ms)) return "before: not a duration (e.g. 0s, 500ms, 1m)";
  if (!ms(config, "after", &join.after_ms)) return "after: not a duration (e.g. 0s, 500ms, 1m)";
  return NULL;
}

WEIR_JOIN(join)
