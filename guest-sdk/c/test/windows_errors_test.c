// The window helpers' refusals and errors natively: a refused record
// leaves every window and timer as it was, even when it fails in one of
// several windows; configuration and mode errors are one line; keys are
// escaped as the other SDKs escape them.

#define _GNU_SOURCE  // open_memstream
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "weir_testing.h"

static weir_windows win;
WEIR_WINDOWS(win)

// Sums decimal values up to 100 per window: refuses other values, and
// records that would take a window over 100.
static void sum_zero(void *acc) { *(int64_t *)acc = 0; }

static void sum_add(void *acc, const weir_record *r, weir_output *out) {
  char buf[24] = {0}, *end;
  memcpy(buf, r->value.ptr, r->value.len < 23 ? r->value.len : 23);
  long long v = strtoll(buf, &end, 10);
  if (end == buf || *end) {
    weir_bad(out, "not a number");
  } else if (*(int64_t *)acc + v > 100) {
    weir_bad(out, "over 100");
  } else {
    *(int64_t *)acc += v;
  }
}

static void sum_merge(void *into, const void *other) { *(int64_t *)into += *(const int64_t *)other; }

static void sum_result(weir_bytes key, int64_t start, int64_t end, const void *acc, weir_output *out) {
  char v[128];
  int n = snprintf(v, sizeof v, "%.*s %lld-%lld: %lld", (int)key.len, (const char *)key.ptr, (long long)start,
                   (long long)end, (long long)*(const int64_t *)acc);
  weir_emit(out, v, (size_t)n);
}

static const weir_aggregate sum = {sizeof(int64_t), sum_zero, sum_add, sum_merge, sum_result};

// Every state entry and timer, as bytes to compare.
static char *snapshot(void) {
  char *buf;
  size_t len;
  FILE *f = open_memstream(&buf, &len);
  weir_bytes k, v;
  for (size_t i = 0; weir_test_state_at(i, &k, &v); i++) {
    fprintf(f, "%zu:", k.len);
    fwrite(k.ptr, 1, k.len, f);
    fprintf(f, "=%zu:", v.len);
    fwrite(v.ptr, 1, v.len, f);
  }
  weir_timer t;
  for (size_t i = 0; weir_test_timer_at(i, &t); i++) {
    fprintf(f, "@%lld/%d/%zu:", (long long)t.time, t.event_time, t.key.len);
    fwrite(t.key.ptr, 1, t.key.len, f);
  }
  fclose(f);
  return buf;
}

#define IN(k, ts, v) {.value = v, .key = k, .timestamp = ts}

static weir_test_result batch(const weir_test_in *in, size_t n) { return weir_test_run(in, n, NULL); }

static void a_refused_record_changes_no_window(void) {
  weir_test_reset();
  win = weir_sliding(100, 50, &sum, NULL);
  weir_test_in first[] = {IN("a", 10, "60"), IN("a", 60, "30")};
  weir_test_result r = batch(first, 2);
  CHECK(!r.broken && !r.rejected_len, "%s", r.broken);
  weir_test_free(&r);
  char *before = snapshot();
  // [50, 150) would take it (30 + 20), [0, 100) not (90 + 20).
  weir_test_in over[] = {IN("a", 70, "20")};
  r = batch(over, 1);
  CHECK(r.rejected_len == 1 && !strcmp(r.rejected[0].reason, "over 100"), "not refused");
  weir_test_free(&r);
  char *after = snapshot();
  CHECK(!strcmp(before, after), "a refused record changed the state");
  free(before), free(after);
  // In a batch: the records around it count, it does not.
  weir_test_in mixed[] = {IN("a", 75, "5"), IN("a", 70, "20"), IN("a", 80, "abc"), IN("a", 85, "1")};
  r = batch(mixed, 4);
  CHECK(r.rejected_len == 2 && r.rejected[0].index == 1 && !strcmp(r.rejected[0].reason, "over 100") &&
            r.rejected[1].index == 2 && !strcmp(r.rejected[1].reason, "not a number"),
        "rejections");
  weir_test_free(&r);
  r = weir_test_fire_timers(1000);
  const char *want[] = {"a -50-50: 60", "a 0-100: 96", "a 50-150: 36"};
  CHECK(r.len == 3, "%zu windows", r.len);
  for (size_t i = 0; i < r.len && i < 3; i++) CHECK(SAME(r.out[i].value, want[i]), "%s", r.out[i].value.ptr);
  weir_test_free(&r);
  // Update mode: a batch of refused records emits nothing.
  weir_test_set_output_mode(WEIR_UPDATE);
  weir_test_in bad[] = {IN("a", 1100, "x"), IN("a", 1100, "200")};
  r = batch(bad, 2);
  CHECK(r.rejected_len == 2 && !r.len, "update mode emitted for refused records");
  weir_test_free(&r);
  // Sessions.
  weir_test_reset();
  win = weir_session(10, &sum, NULL);
  weir_test_in open[] = {IN("a", 0, "50"), IN("a", 18, "1")};
  r = batch(open, 2);
  weir_test_free(&r);
  before = snapshot();
  weir_test_in bridge[] = {IN("a", 10, "zz")};  // would merge both
  r = batch(bridge, 1);
  CHECK(r.rejected_len == 1, "not refused");
  weir_test_free(&r);
  after = snapshot();
  CHECK(!strcmp(before, after), "a refused record changed the sessions");
  free(before), free(after);
}

static bool key_or_refuse(const weir_record *r, weir_bytes *key, weir_output *out) {
  if (!r->has_key) return false;
  if (r->key.len == 6 && !memcmp(r->key.ptr, "refuse", 6)) {
    weir_bad(out, "refused key");
    return false;
  }
  *key = r->key;
  return true;
}

static void keys_are_refused_with_a_reason(void) {
  weir_test_reset();
  win = weir_tumbling(100, &weir_count, key_or_refuse);
  weir_test_in in[] = {{.value = "x"}, IN("refuse", 1, "x"), IN("a", 2, "x")};
  weir_test_result r = batch(in, 3);
  CHECK(r.rejected_len == 2 && !strcmp(r.rejected[0].reason, "no key to window by") &&
            !strcmp(r.rejected[1].reason, "refused key") && r.rejected[1].index == 1,
        "key_by refusals");
  weir_test_free(&r);
  win = weir_tumbling(100, &weir_count, NULL);
  r = batch(in, 1);
  CHECK(r.rejected_len == 1 && !strcmp(r.rejected[0].reason, "record has no key to window by"), "no key");
  weir_test_free(&r);
}

static void broken(const char *what, const char *want) {
  weir_test_in in[] = {IN("a", 1, "x")};
  weir_test_result r = batch(in, 1);
  CHECK(want ? r.broken && !strcmp(r.broken, want) : !r.broken, "%s: %s", what, r.broken ? r.broken : "not broken");
  weir_test_free(&r);
}

static void errors_are_one_line(void) {
  weir_test_reset();
  weir_test_set_event_time(false);
  win = weir_tumbling(100, &weir_count, NULL);
  broken("append",
         "windowed aggregation in append mode needs an [event-time] section: windows close when the "
         "watermark passes them");
  weir_test_set_output_mode(WEIR_UPDATE);
  broken("update",
         "windowed aggregation in update mode needs an [event-time] section: windows close when the "
         "watermark passes them");
  weir_test_set_output_mode(WEIR_COMPLETE);
  broken("complete", NULL);
  weir_test_reset();
  win = weir_tumbling(0, &weir_count, NULL);
  broken("size", "window size must be a positive number of ms, not 0");
  win = weir_sliding(100, -5, &weir_count, NULL);
  broken("slide", "window slide must be a positive number of ms, not -5");
  win = weir_session(-1, &weir_count, NULL);
  broken("gap", "window gap must be a positive number of ms, not -1");
  win = (weir_windows){.gap_ms = 10, .size_ms = 5, .agg = &weir_count};
  broken("mixed", "session windows have a gap, not a size or slide");
  win = weir_tumbling(10, NULL, NULL);
  broken("no aggregate", "windows need an aggregate with zero, add and result");
  win = weir_tumbling(10, &weir_count, NULL);
  weir_timer_register(false, "W", 1, 5);
  weir_test_set_processing_time(10);
  weir_test_result r = weir_test_fire_timers(0);
  CHECK(r.broken && !strcmp(r.broken, "unexpected timer at 5"), "%s", r.broken ? r.broken : "not broken");
  weir_test_free(&r);
}

static void keys_are_escaped_as_in_the_other_sdks(void) {
  struct {
    const char *in, *out;
  } cases[] = {
      {"a\"b\\c\x01\xc3\xa9", "\"a\\\"b\\\\c\\u0001\xc3\xa9\""},
      {"\xe2\x82x\xff\xf0\x9f\x98\x80", "\"\xef\xbf\xbdx\xef\xbf\xbd\xf0\x9f\x98\x80\""},
      {"\xed\xa0\x80\x7f", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\x7f\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    weir_bytes s = {(const uint8_t *)cases[i].in, strlen(cases[i].in)};
    uint8_t buf[64] = {0};
    size_t n = weir_json_string(buf, s);
    CHECK(n == weir_json_string(NULL, s) && n == strlen(cases[i].out) && !memcmp(buf, cases[i].out, n), "%s", buf);
  }
  weir_test_reset();
  weir_test_set_output_mode(WEIR_UPDATE);
  win = weir_tumbling(100, &weir_count, NULL);
  weir_test_in in = IN("q\"1", 150, "x");
  weir_test_result r = weir_test_run_record(&in, NULL);  // the per-record export
  CHECK(r.len == 1 && SAME(r.out[0].value, "{\"key\":\"q\\\"1\",\"start\":100,\"end\":200,\"count\":1}") &&
            SAME(r.out[0].key, "q\"1") && r.out[0].timestamp == 199,
        "%s", r.len ? (const char *)r.out[0].value.ptr : "no output");
  weir_test_free(&r);
}

int main(void) {
  a_refused_record_changes_no_window();
  keys_are_refused_with_a_reason();
  errors_are_one_line();
  keys_are_escaped_as_in_the_other_sdks();
  DONE("windows_errors_test");
}
