// weir's C SDK natively (see weir_testing.h): the imports the generated
// bindings declare (weir/full_transformer.c's __wasm_import_* functions,
// plain undefined symbols off wasm) over in-memory state, timers and
// clocks, and the test API that drives the exports as weir does. For
// wasm32 this file is empty: weir provides the imports.

#ifndef __wasm__

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir_testing.h"

typedef struct {
  uint8_t *ptr;
  size_t len;
} blob;

// A NUL-terminated copy.
static blob dup(const void *p, size_t n) {
  blob b = {malloc(n + 1), n};
  if (!b.ptr) abort();
  if (n) memcpy(b.ptr, p, n);
  b.ptr[n] = 0;
  return b;
}

typedef struct {
  blob key, value;
} kv;

typedef struct {
  int64_t at;
  blob key;
  bool event_time;
} timer;

static struct {
  kv *kv;
  size_t len, cap;
} state;
typedef struct {
  timer *t;
  size_t len, cap;
} timer_set;
// Expiries are timers weir carries out itself: it deletes their keys after
// the timers fired.
static timer_set timers, expiries;
static struct {
  bool has_watermark, no_event_time;
  int64_t watermark, processing_time;
  weir_output_mode mode;
  const char *source;  // NULL: none
  int64_t first_offset;
} clocks;

static int cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  int c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

// The first entry whose key is not below k; *found when it is k.
static size_t find(const uint8_t *k, size_t n, bool *found) {
  size_t lo = 0, hi = state.len;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (cmp(state.kv[mid].key.ptr, state.kv[mid].key.len, k, n) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  *found = lo < state.len && cmp(state.kv[lo].key.ptr, state.kv[lo].key.len, k, n) == 0;
  return lo;
}

// Make room for one more element at i of a growable array.
#define INSERT_AT(arr, field, i)                                                                \
  do {                                                                                          \
    if ((arr).len == (arr).cap) {                                                               \
      (arr).cap = (arr).cap ? (arr).cap * 2 : 16;                                               \
      if (!((arr).field = realloc((arr).field, (arr).cap * sizeof *(arr).field))) abort();      \
    }                                                                                           \
    memmove((arr).field + (i) + 1, (arr).field + (i), ((arr).len - (i)) * sizeof *(arr).field); \
    (arr).len++;                                                                                \
  } while (0)

static void put(const uint8_t *k, size_t kn, const uint8_t *v, size_t vn) {
  bool found;
  size_t i = find(k, kn, &found);
  if (found) {
    free(state.kv[i].value.ptr);
    state.kv[i].value = dup(v, vn);
    return;
  }
  INSERT_AT(state, kv, i);
  state.kv[i] = (kv){dup(k, kn), dup(v, vn)};
}

void __wasm_import_weir_transform_state_get(uint8_t *k, size_t n, uint8_t *ret) {
  bool found;
  size_t i = find(k, n, &found);
  *ret = found;
  if (!found) return;
  blob v = dup(state.kv[i].value.ptr, state.kv[i].value.len);
  memcpy(ret + sizeof(void *), &v.ptr, sizeof v.ptr);
  memcpy(ret + 2 * sizeof(void *), &v.len, sizeof v.len);
}

void __wasm_import_weir_transform_state_put(uint8_t *k, size_t kn, uint8_t *v, size_t vn) { put(k, kn, v, vn); }

void __wasm_import_weir_transform_state_put_many(uint8_t *entries, size_t n) {
  const weir_transform_state_entry_t *e = (const weir_transform_state_entry_t *)entries;
  for (size_t i = 0; i < n; i++) put(e[i].key.ptr, e[i].key.len, e[i].value.ptr, e[i].value.len);
}

void __wasm_import_weir_transform_state_delete(uint8_t *k, size_t n) {
  bool found;
  size_t i = find(k, n, &found);
  if (!found) return;
  free(state.kv[i].key.ptr);
  free(state.kv[i].value.ptr);
  memmove(state.kv + i, state.kv + i + 1, (state.len - i - 1) * sizeof *state.kv);
  state.len--;
}

// Up to limit entries from index i on while their key is below end (or
// has prefix), as a list the caller frees.
static void scan(size_t i, const uint8_t *end, size_t end_len, bool prefix, int32_t limit, uint8_t *ret) {
  size_t most = (uint32_t)limit < state.len - i ? (uint32_t)limit : state.len - i, n = 0;
  weir_transform_state_entry_t *list = malloc((most + 1) * sizeof *list);
  if (!list) abort();
  for (; n < most; i++) {
    blob k = state.kv[i].key;
    bool in =
        prefix ? k.len >= end_len && memcmp(k.ptr, end, end_len) == 0 : !end || cmp(k.ptr, k.len, end, end_len) < 0;
    if (!in) break;
    blob kc = dup(k.ptr, k.len), vc = dup(state.kv[i].value.ptr, state.kv[i].value.len);
    list[n++] = (weir_transform_state_entry_t){{kc.ptr, kc.len}, {vc.ptr, vc.len}};
  }
  if (!n) {  // an empty list owns no memory: the caller's free skips it
    free(list);
    list = NULL;
  }
  memcpy(ret, &list, sizeof list);
  memcpy(ret + sizeof(void *), &n, sizeof n);
}

void __wasm_import_weir_transform_state_scan(uint8_t *start, size_t start_len, int32_t has_end, uint8_t *end,
                                             size_t end_len, int32_t limit, uint8_t *ret) {
  bool found;
  scan(find(start, start_len, &found), has_end ? end : NULL, end_len, false, limit, ret);
}

void __wasm_import_weir_transform_state_scan_prefix(uint8_t *prefix, size_t prefix_len, int32_t has_after,
                                                    uint8_t *after, size_t after_len, int32_t limit, uint8_t *ret) {
  bool found;
  size_t i = find(prefix, prefix_len, &found);
  if (has_after && cmp(after, after_len, prefix, prefix_len) >= 0) {
    i = find(after, after_len, &found);
    i += found;
  }
  scan(i, prefix, prefix_len, true, limit, ret);
}

// As the host answers: each range scanned in order while the next answer
// cannot take the call past 10,000 entries in all (the first always
// answered), as a list of lists the caller frees.
void __wasm_import_weir_transform_state_scan_many(uint8_t *ranges, size_t n, int32_t limit, uint8_t *ret) {
  const weir_transform_state_key_range_t *r = (const weir_transform_state_key_range_t *)ranges;
  uint32_t lim = (uint32_t)limit < 10000 ? (uint32_t)limit : 10000, left = 10000;
  weir_transform_state_list_entry_t *lists = malloc((n + 1) * sizeof *lists);
  if (!lists) abort();
  size_t done = 0;
  for (; done < n && (done == 0 || left >= lim); done++) {
    uint8_t page[2 * sizeof(void *)];
    bool found;
    const full_transformer_option_list_u8_t *end = &r[done].end;
    scan(find(r[done].start.ptr, r[done].start.len, &found), end->is_some ? end->val.ptr : NULL, end->val.len, false,
         (int32_t)lim, page);
    memcpy(&lists[done].ptr, page, sizeof(void *));
    memcpy(&lists[done].len, page + sizeof(void *), sizeof(size_t));
    left -= (uint32_t)lists[done].len;
  }
  if (!done) {
    free(lists);
    lists = NULL;
  }
  memcpy(ret, &lists, sizeof lists);
  memcpy(ret + sizeof(void *), &done, sizeof done);
}

static int timer_cmp(const timer *a, const timer *b) {
  if (a->at != b->at) return a->at < b->at ? -1 : 1;
  int c = cmp(a->key.ptr, a->key.len, b->key.ptr, b->key.len);
  return c ? c : (a->event_time < b->event_time) - (a->event_time > b->event_time);
}

// The first timer of set not before t; *found when it is t.
static size_t find_timer(const timer_set *set, const timer *t, bool *found) {
  size_t i = 0;
  while (i < set->len && timer_cmp(&set->t[i], t) < 0) i++;
  *found = i < set->len && timer_cmp(&set->t[i], t) == 0;
  return i;
}

static void add_timer(timer_set *set, int32_t domain, uint8_t *k, size_t n, int64_t at) {
  timer t = {at, {k, n}, domain == WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME};
  bool found;
  size_t i = find_timer(set, &t, &found);
  if (found) return;
  INSERT_AT(*set, t, i);
  t.key = dup(k, n);
  set->t[i] = t;
}

static void remove_timer(timer_set *set, int32_t domain, uint8_t *k, size_t n, int64_t at) {
  timer t = {at, {k, n}, domain == WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME};
  bool found;
  size_t i = find_timer(set, &t, &found);
  if (!found) return;
  free(set->t[i].key.ptr);
  memmove(set->t + i, set->t + i + 1, (set->len - i - 1) * sizeof *set->t);
  set->len--;
}

void __wasm_import_weir_transform_timers_register(int32_t domain, uint8_t *k, size_t n, int64_t at) {
  add_timer(&timers, domain, k, n, at);
}

void __wasm_import_weir_transform_timers_delete(int32_t domain, uint8_t *k, size_t n, int64_t at) {
  remove_timer(&timers, domain, k, n, at);
}

void __wasm_import_weir_transform_timers_expire(int32_t domain, uint8_t *k, size_t n, int64_t at) {
  add_timer(&expiries, domain, k, n, at);
}

void __wasm_import_weir_transform_timers_expire_many(int32_t domain, uint8_t *list, size_t n) {
  const weir_transform_timers_expiry_t *e = (const weir_transform_timers_expiry_t *)list;
  for (size_t i = 0; i < n; i++) add_timer(&expiries, domain, e[i].key.ptr, e[i].key.len, e[i].at);
}

void __wasm_import_weir_transform_timers_cancel_expiry(int32_t domain, uint8_t *k, size_t n, int64_t at) {
  remove_timer(&expiries, domain, k, n, at);
}

static bool due(const timer *t) {
  return t->event_time ? clocks.has_watermark && t->at <= clocks.watermark : t->at <= clocks.processing_time;
}

// Take the timers of set the clocks reach, in order: each goes to take
// (with ctx), then away; the others stay.
static void take_due(timer_set *set, void (*take)(const timer *t, void *ctx), void *ctx) {
  size_t kept = 0;
  for (size_t i = 0; i < set->len; i++) {
    timer t = set->t[i];
    if (!due(&t)) {
      set->t[kept++] = t;
      continue;
    }
    take(&t, ctx);
    free(t.key.ptr);
  }
  set->len = kept;
}

static void delete_key(const timer *t, void *ctx) {
  (void)ctx;
  __wasm_import_weir_transform_state_delete(t->key.ptr, t->key.len);
}

// Delete the keys of the expiries the clocks reach (for weir_testing.c,
// after the timers fired, as weir does).
void weir_native_expire_due(void) { take_due(&expiries, delete_key, NULL); }

void __wasm_import_weir_transform_context_watermark(uint8_t *ret) {
  *ret = clocks.has_watermark;
  memcpy(ret + 8, &clocks.watermark, sizeof clocks.watermark);
}

int64_t __wasm_import_weir_transform_context_processing_time(void) { return clocks.processing_time; }

int32_t __wasm_import_weir_transform_context_query_output_mode(void) {
  return clocks.mode == WEIR_UPDATE     ? WEIR_TRANSFORM_CONTEXT_OUTPUT_MODE_UPDATE
         : clocks.mode == WEIR_COMPLETE ? WEIR_TRANSFORM_CONTEXT_OUTPUT_MODE_COMPLETE
                                        : WEIR_TRANSFORM_CONTEXT_OUTPUT_MODE_APPEND;
}

int32_t __wasm_import_weir_transform_context_event_time(void) { return !clocks.no_event_time; }

void __wasm_import_weir_transform_context_source(uint8_t *ret) {
  *ret = clocks.source != NULL;
  if (!clocks.source) return;
  blob s = dup(clocks.source, strlen(clocks.source));
  memcpy(ret + sizeof(void *), &s.ptr, sizeof s.ptr);
  memcpy(ret + 2 * sizeof(void *), &s.len, sizeof s.len);
}

// The C SDK keys its joins with its own key function and never asks for
// the host's state keys; natively there are none.
void __wasm_import_weir_transform_context_state_keys(uint8_t *ret) { *ret = 0; }

void weir_test_set_source(const char *name, int64_t first_offset) {
  clocks.source = name;
  clocks.first_offset = first_offset;
}

int64_t weir_test_first_offset(void) { return clocks.first_offset; }

void __wasm_import_weir_transform_log_log(int32_t level, uint8_t *msg, size_t n) {
  static const char *names[] = {"trace", "debug", "info", "warn", "error"};
  fprintf(stderr, "[%s] %.*s\n", level >= 0 && level < 5 ? names[level] : "log", (int)n, (const char *)msg);
}

// Metrics reported so far, by name, for weir_test_counter and
// weir_test_gauge (a test reports a handful; past 64 names they are
// dropped).
static struct {
  char name[64];
  uint64_t counter;
  double gauge;
  bool has_gauge;
} metrics[64];

static size_t metric_at(const uint8_t *name, size_t n) {
  size_t i = 0;
  for (; i < 64 && metrics[i].name[0]; i++)
    if (strlen(metrics[i].name) == n && !memcmp(metrics[i].name, name, n)) return i;
  if (i < 64 && n < sizeof metrics[i].name) memcpy(metrics[i].name, name, n);
  return n < sizeof metrics[0].name ? i : 64;
}

void __wasm_import_weir_transform_metrics_counter_add(uint8_t *name, size_t n, int64_t delta) {
  size_t i = metric_at(name, n);
  if (i < 64) metrics[i].counter += (uint64_t)delta;
}

void __wasm_import_weir_transform_metrics_gauge_set(uint8_t *name, size_t n, double value) {
  size_t i = metric_at(name, n);
  if (i < 64) metrics[i].gauge = value, metrics[i].has_gauge = true;
}

uint64_t weir_test_counter(const char *name) {
  size_t i = metric_at((const uint8_t *)name, strlen(name));
  return i < 64 ? metrics[i].counter : 0;
}

bool weir_test_gauge(const char *name, double *value) {
  size_t i = metric_at((const uint8_t *)name, strlen(name));
  if (i >= 64 || !metrics[i].has_gauge) return false;
  *value = metrics[i].gauge;
  return true;
}

// weir:transform/json: the C SDK reads JSON itself and never calls it; the
// generated bindings still reference it.
void __wasm_import_weir_transform_json_numbers(uint8_t *values, size_t values_len, uint8_t *ends,
                                               size_t ends_len, uint8_t *name, size_t name_len,
                                               uint8_t *ret) {
  (void)values, (void)values_len, (void)ends, (void)ends_len, (void)name, (void)name_len, (void)ret;
  fprintf(stderr, "weir:transform/json is not available natively\n");
  abort();
}

void weir_test_reset(void) {
  for (size_t i = 0; i < state.len; i++) free(state.kv[i].key.ptr), free(state.kv[i].value.ptr);
  for (size_t i = 0; i < timers.len; i++) free(timers.t[i].key.ptr);
  for (size_t i = 0; i < expiries.len; i++) free(expiries.t[i].key.ptr);
  state.len = timers.len = expiries.len = 0;
  memset(&clocks, 0, sizeof clocks);
}

void weir_test_set_watermark(int64_t ms) {
  clocks.watermark = ms;
  clocks.has_watermark = true;
}

void weir_test_set_processing_time(int64_t ms) { clocks.processing_time = ms; }
void weir_test_set_output_mode(weir_output_mode mode) { clocks.mode = mode; }
void weir_test_set_event_time(bool on) { clocks.no_event_time = !on; }

bool weir_test_state_at(size_t i, weir_bytes *key, weir_bytes *value) {
  if (i >= state.len) return false;
  *key = (weir_bytes){state.kv[i].key.ptr, state.kv[i].key.len};
  *value = (weir_bytes){state.kv[i].value.ptr, state.kv[i].value.len};
  return true;
}

bool weir_test_timer_at(size_t i, weir_timer *t) {
  if (i >= timers.len) return false;
  *t = (weir_timer){{timers.t[i].key.ptr, timers.t[i].key.len}, timers.t[i].at, timers.t[i].event_time};
  return true;
}

static void add_fired(const timer *t, void *ctx) {
  exports_weir_transform_timer_handler_fired_timers_t *fired = ctx;
  size_t n = fired->times.len++;
  memcpy(fired->keys.ptr + fired->keys.len, t->key.ptr, t->key.len);
  fired->keys.len += t->key.len;
  fired->key_ends.ptr[n] = (uint32_t)fired->keys.len;
  fired->times.ptr[n] = t->at;
  fired->domains.ptr[n] =
      t->event_time ? WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME : WEIR_TRANSFORM_TYPES_TIME_DOMAIN_PROCESSING_TIME;
}

// Move the timers the clocks reach, in order, into fired's columns (for
// weir_testing.c).
void weir_native_take_due(exports_weir_transform_timer_handler_fired_timers_t *fired) {
  size_t bytes = 0;
  for (size_t i = 0; i < timers.len; i++) bytes += timers.t[i].key.len;
  fired->keys.ptr = malloc(bytes + 1);
  fired->key_ends.ptr = malloc((timers.len + 1) * sizeof(uint32_t));
  fired->times.ptr = malloc((timers.len + 1) * sizeof(int64_t));
  fired->domains.ptr = malloc(timers.len + 1);
  fired->keys.len = fired->times.len = 0;
  take_due(&timers, add_fired, fired);
  fired->key_ends.len = fired->domains.len = fired->times.len;
}

#endif
