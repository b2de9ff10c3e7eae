// The C SDK's JSON field reader: fields of each kind, escapes in keys and
// strings, numbers at the int64 edges, every malformed document refused;
// and the filter-and-flag transform written with it, through the harness.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "weir.h"
#include "weir_testing.h"

// Drop amount < 10; add "big": true at >= 1000; refuse what is not a JSON
// object with a numeric amount.
static void filter_and_flag(const weir_record *r, weir_output *out) {
  weir_json_value amount;
  double a;
  if (weir_json_get(r->value, "amount", &amount) != WEIR_JSON_FOUND || !weir_json_double(amount, &a)) {
    weir_bad(out, "no numeric amount");
    return;
  }
  if (a < 10) return;
  if (a < 1000) {
    weir_emit(out, r->value.ptr, r->value.len);
    return;
  }
  // The object with one more field: its text up to the closing brace.
  size_t end = r->value.len;
  while (end > 0 && r->value.ptr[end - 1] != '}') end--;
  uint8_t *buf = malloc(end + 16);
  size_t n = end - 1;
  memcpy(buf, r->value.ptr, n);
  memcpy(buf + n, ",\"big\":true}", 12);
  weir_emit(out, buf, n + 12);
  free(buf);
}
WEIR_FLAT_MAP(filter_and_flag)

static weir_bytes text(const char *s) { return (weir_bytes){(const uint8_t *)s, strlen(s)}; }

static weir_json_result get(const char *doc, const char *name, weir_json_value *v) {
  return weir_json_get(text(doc), name, v);
}

int main(void) {
  weir_json_value v;
  const char *doc = " {\"k\":\"a\", \"amount\": 1250.5, \"n\":-42, \"ok\":true, \"nested\":{\"amount\":[1,{\"x\":null}]},"
                    " \"s\":\"tab\\tq\\\"\\u00e9\\ud83d\\ude00\", \"z\":null } ";
  double d;
  int64_t i;
  bool b;
  CHECK(get(doc, "amount", &v) == WEIR_JSON_FOUND && weir_json_double(v, &d) && d == 1250.5, "amount");
  CHECK(!weir_json_int64(v, &i), "a fraction is not an int64");
  CHECK(get(doc, "n", &v) == WEIR_JSON_FOUND && weir_json_int64(v, &i) && i == -42, "n");
  CHECK(get(doc, "ok", &v) == WEIR_JSON_FOUND && weir_json_bool(v, &b) && b, "ok");
  CHECK(get(doc, "nested", &v) == WEIR_JSON_FOUND && v.kind == WEIR_JSON_OBJECT &&
            SAME(v.raw, "{\"amount\":[1,{\"x\":null}]}"),
        "nested raw");
  CHECK(get(doc, "z", &v) == WEIR_JSON_FOUND && v.kind == WEIR_JSON_NULL, "null");
  CHECK(get(doc, "x", &v) == WEIR_JSON_MISSING, "nested keys are not top-level");
  CHECK(get(doc, "k", &v) == WEIR_JSON_FOUND && v.kind == WEIR_JSON_STRING && SAME(v.raw, "\"a\""), "k");

  uint8_t buf[64];
  CHECK(get(doc, "s", &v) == WEIR_JSON_FOUND, "s");
  size_t n = weir_json_unescape(v.raw, buf, sizeof buf);
  const char *want = "tab\tq\"\xc3\xa9\xf0\x9f\x98\x80";
  CHECK(n == strlen(want) && memcmp(buf, want, n) == 0, "unescaped %zu bytes", n);
  CHECK(weir_json_unescape(v.raw, buf, 2) == n, "the length past a small buffer");

  // An escaped key matches its text; of repeated names, the first.
  CHECK(get("{\"a\\u006dount\":7,\"amount\":8}", "amount", &v) == WEIR_JSON_FOUND &&
            weir_json_int64(v, &i) && i == 7,
        "escaped and repeated keys");
  CHECK(get("{\"a\\u006dount\":7}", "amount", &v) == WEIR_JSON_FOUND && weir_json_int64(v, &i) && i == 7,
        "escaped key");
  CHECK(get("{}", "a", &v) == WEIR_JSON_MISSING, "empty object");

  // int64 edges.
  CHECK(get("{\"a\":9223372036854775807}", "a", &v) == WEIR_JSON_FOUND && weir_json_int64(v, &i) &&
            i == INT64_MAX,
        "max");
  CHECK(get("{\"a\":-9223372036854775808}", "a", &v) == WEIR_JSON_FOUND && weir_json_int64(v, &i) &&
            i == INT64_MIN,
        "min");
  CHECK(get("{\"a\":9223372036854775808}", "a", &v) == WEIR_JSON_FOUND && !weir_json_int64(v, &i),
        "past max");
  CHECK(get("{\"a\":1e3}", "a", &v) == WEIR_JSON_FOUND && !weir_json_int64(v, &i) &&
            weir_json_double(v, &d) && d == 1000.0,
        "exponent");

  // Malformed documents, wherever the fault is (before or after the field).
  const char *bad[] = {
      "",
      "[1]",
      "{\"amount\":1",
      "{\"amount\":1,}",
      "{\"amount\":01}",
      "{\"amount\":1.}",
      "{\"amount\":-}",
      "{\"amount\":1} x",
      "{\"amount\":1,\"b\":tru}",
      "{\"amount\":1,\"b\":\"\\x\"}",
      "{\"amount\":1,\"b\":\"\\u12g4\"}",
      "{\"amount\":1,\"b\":\"a\nb\"}",
      "{\"amount\":1,\"b\":[1,2}",
      "{\"amount\" 1}",
      "{amount:1}",
      "{\"amount\":1,\"b\":\"unterminated}",
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    CHECK(get(bad[k], "amount", &v) == WEIR_JSON_INVALID, "accepted %s", bad[k]);
  }
  // Nesting past 64 levels is refused, not recursed into.
  char deep[200];
  size_t p = 0;
  p += (size_t)sprintf(deep + p, "{\"a\":");
  for (int k = 0; k < 70; k++) deep[p++] = '[';
  for (int k = 0; k < 70; k++) deep[p++] = ']';
  deep[p++] = '}';
  deep[p] = 0;
  CHECK(get(deep, "a", &v) == WEIR_JSON_INVALID, "70 levels");

  // The transform over a batch: dropped, kept, flagged and refused records.
  const char *in[] = {"{\"amount\":5}", "{\"amount\":50,\"id\":1}", "{\"amount\":2000} ", "nope",
                      "{\"amount\":\"12\"}"};
  weir_test_in records[5];
  for (int k = 0; k < 5; k++) records[k] = (weir_test_in){.value = in[k], .value_len = strlen(in[k])};
  weir_test_result r = weir_test_run(records, 5, NULL);
  CHECK(r.broken == NULL, "%s", r.broken);
  CHECK(r.len == 2, "%zu outputs", r.len);
  if (r.len == 2) {
    CHECK(strcmp((const char *)r.out[0].value.ptr, "{\"amount\":50,\"id\":1}") == 0, "%s", r.out[0].value.ptr);
    CHECK(strcmp((const char *)r.out[1].value.ptr, "{\"amount\":2000,\"big\":true}") == 0, "%s",
          r.out[1].value.ptr);
  }
  CHECK(r.rejected_len == 2 && r.rejected[0].index == 3 && r.rejected[1].index == 4, "%zu refused",
        r.rejected_len);
  weir_test_free(&r);
  DONE("json_test");
}
