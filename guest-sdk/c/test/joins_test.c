// The SDK's joins natively, against the join's definition: random batches,
// each from one source, with the host's watermark (the smallest of each
// source's largest time, minus a delay) and its late drops, for every join
// kind; rows leave state when the range ends; misuse is explained.

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "weir_testing.h"

static void pair_output(const weir_joined *j, weir_output *out) {
  char v[64];
  int n = snprintf(v, sizeof v, "%.*s|%.*s", j->left ? (int)j->left->value.len : 1,
                   j->left ? (const char *)j->left->value.ptr : "-", j->right ? (int)j->right->value.len : 1,
                   j->right ? (const char *)j->right->value.ptr : "-");
  weir_emit(out, v, (size_t)n);
}

static weir_join join = {.left = "orders", .right = "payments", .before_ms = 2, .after_ms = 5, .output = pair_output};
WEIR_JOIN(join)

#define MAXROWS 400
#define MAXOUT 4000

typedef struct {
  char side;
  int key;
  int64_t ts;
  char value[16];
} row;

static char got[MAXOUT][40], want[MAXOUT][40];
static int ngot, nwant;

static int by_text(const void *a, const void *b) { return strcmp(a, b); }

static void collect(weir_test_result *r) {
  CHECK(!r->broken, "%s", r->broken);
  CHECK(r->rejected_len == 0, "%zu rejected", r->rejected_len);
  for (size_t i = 0; i < r->len && ngot < MAXOUT; i++) {
    snprintf(got[ngot++], 40, "%.*s", (int)r->out[i].value.len, (const char *)r->out[i].value.ptr);
  }
  weir_test_free(r);
}

static bool hit(const row *a, const row *b) { return a->key == b->key && a->ts - 2 <= b->ts && b->ts <= a->ts + 5; }

static void reference(weir_join_kind kind, const row *rows, int n) {
  nwant = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].side != 'L') continue;
    bool any = false;
    for (int k = 0; k < n; k++) {
      if (rows[k].side == 'R' && hit(&rows[i], &rows[k])) {
        snprintf(want[nwant++], 40, "%s|%s", rows[i].value, rows[k].value);
        any = true;
      }
    }
    if (!any && (kind == WEIR_LEFT_OUTER || kind == WEIR_FULL_OUTER)) snprintf(want[nwant++], 40, "%s|-", rows[i].value);
  }
  for (int k = 0; k < n; k++) {
    if (rows[k].side != 'R' || !(kind == WEIR_RIGHT_OUTER || kind == WEIR_FULL_OUTER)) continue;
    bool any = false;
    for (int i = 0; i < n; i++) any = any || (rows[i].side == 'L' && hit(&rows[i], &rows[k]));
    if (!any) snprintf(want[nwant++], 40, "-|%s", rows[k].value);
  }
  qsort(want, (size_t)nwant, 40, by_text);
}

static uint32_t seed;
static uint32_t next(uint32_t n) {
  seed = seed * 1103515245u + 12345u;
  return (seed >> 16) % n;
}

static void simulate(weir_join_kind kind, uint32_t s) {
  weir_test_reset();
  join.kind = kind;
  seed = s;
  ngot = 0;
  static row kept[MAXROWS];
  static const char *keys[] = {"k0", "k1", "k2", "k3", "k4", "k5"};
  int nkept = 0, n = 0;
  int64_t wm = 0, clock[2] = {0, 0}, top[2] = {0, 0};
  bool has_wm = false, seen[2] = {false, false};
  while (n < 300) {
    int side = (int)next(2);
    row batch[12];
    int size = 1 + (int)next(11), m = 0;
    weir_test_in in[12];
    for (int i = 0; i < size; i++, n++) {
      clock[side] += next(3);
      row r = {side ? 'R' : 'L', (int)next(6), clock[side] - next(8), ""};
      snprintf(r.value, sizeof r.value, "%c%d", r.side, n);
      batch[i] = r;
      if (!seen[side] || r.ts > top[side]) top[side] = r.ts, seen[side] = true;
    }
    for (int i = 0; i < size; i++) {
      if (has_wm && batch[i].ts < wm) continue;
      kept[nkept++] = batch[i];
      in[m++] = (weir_test_in){.value = kept[nkept - 1].value, .key = keys[batch[i].key], .timestamp = batch[i].ts};
    }
    if (has_wm) weir_test_set_watermark(wm);
    weir_test_set_source(side ? "payments" : "orders", (int64_t)n * 100);
    weir_test_result r;
    if (m) {  // the host calls no guest with an empty batch
      r = weir_test_run(in, (size_t)m, NULL);
      collect(&r);
    }
    weir_test_set_source(NULL, 0);
    if (has_wm) {
      r = weir_test_fire_timers(wm);
      collect(&r);
    }
    if (seen[0] && seen[1]) {
      int64_t cand = (top[0] < top[1] ? top[0] : top[1]) - 6;
      if (!has_wm || cand > wm) wm = cand, has_wm = true;
    } else {
      int64_t cand = (seen[0] ? top[0] : top[1]) - 6;
      if (!has_wm || cand > wm) wm = cand, has_wm = true;
    }
  }
  weir_test_result r = weir_test_fire_timers(INT64_C(1) << 50);
  collect(&r);
  weir_bytes k, v;
  CHECK(!weir_test_state_at(0, &k, &v), "rows left in state (kind %d)", kind);
  qsort(got, (size_t)ngot, 40, by_text);
  reference(kind, kept, nkept);
  bool pairs = false;
  for (int i = 0; i < nwant; i++) pairs = pairs || !strchr(want[i], '-');
  CHECK(pairs, "no pairs matched (kind %d)", kind);
  CHECK(ngot == nwant, "kind %d seed %u: %d rows, %d expected", kind, s, ngot, nwant);
  for (int i = 0; i < ngot && i < nwant; i++) {
    CHECK(!strcmp(got[i], want[i]), "kind %d seed %u: %s, expected %s", kind, s, got[i], want[i]);
    if (strcmp(got[i], want[i])) break;
  }
}

int main(void) {
  weir_join_kind kinds[] = {WEIR_INNER, WEIR_LEFT_OUTER, WEIR_RIGHT_OUTER, WEIR_FULL_OUTER};
  for (int k = 0; k < 4; k++) {
    for (uint32_t s = 1; s <= 3; s++) simulate(kinds[k], s * 7919);
  }

  // A left row waits until the watermark passes its time plus `after`.
  weir_test_reset();
  join.kind = WEIR_LEFT_OUTER;
  weir_test_set_source("orders", 0);
  weir_test_in o = {.value = "o", .key = "k", .timestamp = 100};
  weir_test_result r = weir_test_run(&o, 1, NULL);
  CHECK(r.len == 0 && !r.broken, "%zu outputs", r.len);
  weir_test_free(&r);
  weir_test_set_source(NULL, 0);
  r = weir_test_fire_timers(105);
  CHECK(r.len == 0, "%zu outputs at 105", r.len);
  weir_test_free(&r);
  r = weir_test_fire_timers(106);
  CHECK(r.len == 1 && SAME(r.out[0].value, "o|-") && SAME(r.out[0].key, "k") && r.out[0].timestamp == 100,
        "%zu outputs at 106", r.len);
  weir_test_free(&r);

  // Misuse.
  weir_test_reset();
  weir_test_set_source("refunds", 0);
  r = weir_test_run(&o, 1, NULL);
  CHECK(r.broken && strstr(r.broken, "source `refunds`, which this join does not read"), "%s", r.broken);
  weir_test_free(&r);
  weir_test_set_source("orders", 0);
  weir_test_in keyless = {.value = "x"};
  r = weir_test_run(&keyless, 1, NULL);
  CHECK(r.rejected_len == 1 && !strcmp(r.rejected[0].reason, "record has no key to join on"), "%zu",
        r.rejected_len);
  weir_test_free(&r);
  weir_test_set_output_mode(WEIR_UPDATE);
  r = weir_test_run(&o, 1, NULL);
  CHECK(r.broken && strstr(r.broken, "output-mode = \"append\""), "%s", r.broken);
  weir_test_free(&r);
  DONE("joins_test");
}
