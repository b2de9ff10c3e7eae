// The C SDK's loop and column rules natively, through the test harness:
// values, keys, headers, timestamps, routes, tombstones, refusals, config,
// the per-record export, keyed state and timers, the batch state imports.

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "weir_testing.h"

static void each(const weir_record *r, weir_output *out) {
  if (!r->has_value) {
    weir_emit_tombstone(out);
  } else if (SAME(r->value, "bad")) {
    weir_emit(out, "dropped", 7);
    weir_bad(out, "bad value");
  } else if (SAME(r->value, "route")) {
    weir_forward_to(out, "other");
  } else if (SAME(r->value, "two")) {
    weir_emit(out, "1", 1);
    weir_set_key(out, "k1", 2);
    weir_emit(out, "2", 1);
    weir_set_timestamp(out, 42);
  } else if (SAME(r->value, "count")) {  // per key in state, reported 10 ms later
    size_t n;
    uint8_t *c = weir_state_get(r->key.ptr, r->key.len, &n), next = c ? c[0] + 1 : 1;
    free(c);
    weir_state_put(r->key.ptr, r->key.len, &next, 1);
    weir_timer_register(true, r->key.ptr, r->key.len, r->timestamp + 10);
  } else {
    weir_forward(out);
  }
}

WEIR_FLAT_MAP(each)

void weir_on_timer(const weir_timer *t, weir_output *out) {
  size_t n;
  uint8_t *c = weir_state_get(t->key.ptr, t->key.len, &n);
  char v[8];
  int m = snprintf(v, sizeof v, "%d", c ? c[0] : 0);
  free(c);
  weir_state_delete(t->key.ptr, t->key.len);
  weir_emit(out, v, (size_t)m);
}

const char *weir_init(const weir_config *c) {
  char *mode = weir_config_get(c, "mode");
  bool ok = !mode || !strcmp(mode, "ok");
  free(mode);
  return ok ? NULL : "mode must be ok";
}

static void columns(void) {
  weir_test_header h[] = {{"h", "1"}};
  weir_test_in in[] = {{.value = "a", .key = "k", .timestamp = 5, .headers = h, .header_count = 1},
                       {.timestamp = 6},
                       {.value = "bad"},
                       {.value = "route"},
                       {.value = "two", .timestamp = 7}};
  weir_test_result r = weir_test_run(in, 5, (const char *[]){"mode", "ok", NULL});
  CHECK(!r.broken && r.len == 5, "%zu outputs (%s)", r.len, r.broken ? r.broken : "");
  if (r.len != 5) {
    weir_test_free(&r);
    return;
  }
  weir_test_out *o = r.out;
  CHECK(SAME(o[0].value, "a") && o[0].has_key && SAME(o[0].key, "k") && o[0].timestamp == 5 && o[0].header_count == 1 &&
            SAME(o[0].headers[0].name, "h") && SAME(o[0].headers[0].value, "1") && !o[0].output,
        "forwarded");
  CHECK(!o[1].has_value && o[1].origin == 1 && o[1].timestamp == 6 && !o[1].header_count, "tombstone");
  CHECK(r.rejected_len == 1 && r.rejected[0].index == 2 && !strcmp(r.rejected[0].reason, "bad value"), "refused");
  CHECK(SAME(o[2].value, "route") && o[2].origin == 3 && o[2].output && !strcmp(o[2].output, "other"), "routed");
  CHECK(SAME(o[3].value, "1") && SAME(o[3].key, "k1") && o[3].timestamp == 7 && o[3].origin == 4, "set key");
  CHECK(SAME(o[4].value, "2") && !o[4].has_key && o[4].timestamp == 42 && o[4].origin == 4, "set timestamp");
  weir_test_free(&r);
  r = weir_test_run(in, 1, (const char *[]){"mode", "no", NULL});
  CHECK(r.broken && !strcmp(r.broken, "mode must be ok"), "config accepted");
  weir_test_free(&r);
  r = weir_test_run_record(&in[4], NULL);
  CHECK(r.len == 2 && SAME(r.out[0].key, "k1") && r.out[1].timestamp == 42, "per record");
  weir_test_free(&r);
  r = weir_test_run_record(&in[2], NULL);
  CHECK(!r.len && r.rejected_len == 1 && !strcmp(r.rejected[0].reason, "bad value"), "per record refusal");
  weir_test_free(&r);
}

static void state_and_timers(void) {
  weir_test_reset();
  weir_test_in in[] = {{.value = "count", .key = "a", .timestamp = 1},
                       {.value = "count", .key = "a", .timestamp = 3},
                       {.value = "count", .key = "b", .timestamp = 2}};
  weir_test_result r = weir_test_run(in, 3, NULL);
  CHECK(!r.len && !r.broken, "outputs");
  weir_test_free(&r);
  weir_bytes k, v;
  CHECK(weir_test_state_at(0, &k, &v) && SAME(k, "a") && v.len == 1 && v.ptr[0] == 2, "state a");
  CHECK(weir_test_state_at(1, &k, &v) && SAME(k, "b") && v.ptr[0] == 1 && !weir_test_state_at(2, &k, &v), "state b");
  r = weir_test_fire_timers(12);  // a at 11 and b at 12, in time order
  CHECK(r.len == 2 && SAME(r.out[0].value, "2") && SAME(r.out[0].key, "a") && r.out[0].timestamp == 11 &&
            SAME(r.out[1].value, "1") && SAME(r.out[1].key, "b") && r.out[1].origin == 1,
        "fired");
  weir_test_free(&r);
  weir_timer t;
  CHECK(weir_test_timer_at(0, &t) && t.time == 13 && t.event_time && !weir_test_timer_at(1, &t), "a timer left");
  r = weir_test_fire_timers(20);
  CHECK(r.len == 1 && SAME(r.out[0].value, "0"), "state deleted");
  weir_test_free(&r);
}

// The native stand-ins of the batch imports: scan-many answers each range
// as scan does; expire-many registers expiries that delete their keys.
static void batch_imports(void) {
  weir_test_reset();
  const char *keys[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) {
    full_transformer_list_u8_t k = {(uint8_t *)keys[i], 1}, v = {(uint8_t *)"v", 1};
    weir_transform_state_put(&k, &v);
  }
  weir_transform_state_key_range_t ranges[] = {
      {{(uint8_t *)"a", 1}, {true, {(uint8_t *)"c", 1}}},
      {{(uint8_t *)"x", 1}, {false, {NULL, 0}}},
      {{(uint8_t *)"b", 1}, {false, {NULL, 0}}},
  };
  weir_transform_state_list_key_range_t list = {ranges, 3};
  weir_transform_state_list_list_entry_t got;
  weir_transform_state_scan_many(&list, 2, &got);
  CHECK(got.len == 3 && got.ptr[0].len == 2 && got.ptr[1].len == 0 && got.ptr[2].len == 2 &&
            SAME(got.ptr[2].ptr[1].key, "c"),
        "scan-many answers");
  weir_transform_state_list_list_entry_free(&got);
  weir_transform_timers_expiry_t e[] = {{{(uint8_t *)"a", 1}, 5}, {{(uint8_t *)"b", 1}, 50}};
  weir_transform_timers_list_expiry_t expiries = {e, 2};
  weir_transform_timers_expire_many(WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME, &expiries);
  weir_test_result r = weir_test_fire_timers(10);
  weir_test_free(&r);
  weir_bytes k, v;
  CHECK(weir_test_state_at(0, &k, &v) && SAME(k, "b") && weir_test_state_at(2, &k, &v) && !weir_test_state_at(3, &k, &v),
        "an expiry due deleted its key");
}

int main(void) {
  columns();
  state_and_timers();
  batch_imports();
  DONE("sdk_test");
}
