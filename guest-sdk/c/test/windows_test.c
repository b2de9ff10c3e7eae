// The SDK's window helpers natively, against straightforward references:
// tumbling, sliding and session windows in append, update and complete
// modes over out-of-order records (some before the epoch), closed as the
// watermark follows them. Refusals and errors: windows_errors_test.c.

#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "weir_testing.h"

static weir_windows win;
WEIR_WINDOWS(win)

#define N 150
#define MAXW 4000

typedef struct {
  int key;
  int64_t ts;
} event;

typedef struct {
  int key;
  int64_t start, end;
  long long count;
  uint32_t index;  // the batch's last record that changed it
} window;

static event evs[N];
static const char *keys[] = {"k0", "k1", "k2"};

// Disordered within 60 ms, so no record is older than the newest seen - 60.
static void make_events(uint32_t seed, int step) {
  for (int i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    evs[i].key = (int)(seed >> 16) % 3;
    seed = seed * 1103515245u + 12345u;
    evs[i].ts = -500 + (int64_t)i * step + (seed >> 16) % 60;
  }
}

static weir_test_result run(int from, int to) {
  weir_test_in in[N];
  for (int i = from; i < to; i++) {
    in[i - from] = (weir_test_in){.value = "x", .key = keys[evs[i].key], .timestamp = evs[i].ts};
  }
  return weir_test_run(in, (size_t)(to - from), NULL);
}

// Output o as a window, checking its key and timestamp.
static window parse(const weir_test_out *o) {
  window w = {-1, 0, 0, 0, o->origin};
  long long start, end;
  int n = sscanf((const char *)o->value.ptr, "{\"key\":\"k%d\",\"start\":%lld,\"end\":%lld,\"count\":%lld}", &w.key,
                 &start, &end, &w.count);
  CHECK(n == 4 && w.key >= 0 && w.key < 3, "output %s", (const char *)o->value.ptr);
  w.start = start, w.end = end;
  if (n == 4) CHECK(o->has_key && SAME(o->key, keys[w.key]) && o->timestamp == end - 1, "%s", o->value.ptr);
  return w;
}

static int by_window(const void *a, const void *b) {
  const window *x = a, *y = b;
  if (x->key != y->key) return x->key - y->key;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return (x->end > y->end) - (x->end < y->end);
}

static window *find(window *ws, size_t *n, int key, int64_t start, int64_t end) {
  for (size_t i = 0; i < *n; i++) {
    if (ws[i].key == key && ws[i].start == start) return &ws[i];
  }
  ws[*n] = (window){key, start, end, 0, 0};
  return &ws[(*n)++];
}

// Fold event e into fixed windows want (index: its place in its batch).
static void fold(window *want, size_t *n, const event *e, int64_t size, int64_t slide, uint32_t index) {
  int64_t m = e->ts % slide;
  for (int64_t start = e->ts - (m < 0 ? m + slide : m); start + size > e->ts; start -= slide) {
    window *w = find(want, n, e->key, start, start + size);
    w->count++;
    w->index = index;
  }
}

// Sessions of gap, per key, of all events.
static size_t sessions_of(window *want, int64_t gap) {
  size_t n = 0;
  for (int k = 0; k < 3; k++) {
    int64_t ts[N];
    size_t m = 0;
    for (int i = 0; i < N; i++) {
      if (evs[i].key == k) ts[m++] = evs[i].ts;
    }
    for (size_t i = 1; i < m; i++) {  // insertion sort
      for (size_t j = i; j > 0 && ts[j - 1] > ts[j]; j--) {
        int64_t t = ts[j];
        ts[j] = ts[j - 1], ts[j - 1] = t;
      }
    }
    for (size_t i = 0; i < m; i++) {
      if (i && ts[i] <= want[n - 1].end) {
        want[n - 1].end = ts[i] + gap;
        want[n - 1].count++;
      } else {
        want[n++] = (window){k, ts[i], ts[i] + gap, 1, 0};
      }
    }
  }
  return n;
}

static size_t state_len(void) {
  weir_bytes k, v;
  size_t n = 0;
  while (weir_test_state_at(n, &k, &v)) n++;
  return n;
}

static void compare(const char *what, window *got, size_t n, window *want, size_t m) {
  qsort(got, n, sizeof *got, by_window);
  qsort(want, m, sizeof *want, by_window);
  CHECK(n == m, "%s: %zu windows, want %zu", what, n, m);
  for (size_t i = 0; i < n && i < m; i++) {
    CHECK(!by_window(&got[i], &want[i]) && got[i].count == want[i].count,
          "%s: k%d %lld-%lld: %lld, want k%d %lld-%lld: %lld", what, got[i].key, (long long)got[i].start,
          (long long)got[i].end, got[i].count, want[i].key, (long long)want[i].start, (long long)want[i].end,
          want[i].count);
  }
}

// Append mode: batches of 7, each followed by the watermark; every window
// comes out once, when the watermark passes its end.
static void append_matches(const char *what, window *want, size_t m) {
  static window got[MAXW];
  size_t n = 0;
  int64_t newest = INT64_MIN;
  for (int i = 0; i < N; i += 7) {
    int to = i + 7 < N ? i + 7 : N;
    weir_test_result r = run(i, to);
    CHECK(!r.broken && !r.rejected_len && !r.len, "%s: %s", what, r.broken ? r.broken : "output before the watermark");
    weir_test_free(&r);
    for (int j = i; j < to; j++) newest = evs[j].ts > newest ? evs[j].ts : newest;
    int64_t wm = to == N ? INT64_MAX / 2 : newest - 60;
    r = weir_test_fire_timers(wm);
    CHECK(!r.broken, "%s: %s", what, r.broken);
    for (size_t j = 0; j < r.len; j++) {
      got[n] = parse(&r.out[j]);
      CHECK(got[n].end <= wm, "%s: window ending %lld emitted at %lld", what, (long long)got[n].end, (long long)wm);
      n++;
    }
    weir_test_free(&r);
  }
  compare(what, got, n, want, m);
  weir_timer t;
  CHECK(!state_len() && !weir_test_timer_at(0, &t), "%s: state or timers left", what);
}

static void fixed_windows_in_append_mode(void) {
  static window want[MAXW];
  int64_t sizes[][2] = {{100, 100}, {100, 30}, {40, 70}};
  for (size_t s = 0; s < 3; s++) {
    weir_test_reset();
    make_events(7, 7);
    win = weir_sliding(sizes[s][0], sizes[s][1], &weir_count, NULL);
    size_t m = 0;
    for (int i = 0; i < N; i++) fold(want, &m, &evs[i], sizes[s][0], sizes[s][1], 0);
    append_matches("fixed/append", want, m);
  }
}

static void sessions_in_append_mode(void) {
  static window want[MAXW];
  weir_test_reset();
  make_events(11, 9);
  win = weir_session(25, &weir_count, NULL);
  append_matches("sessions/append", want, sessions_of(want, 25));
}

// Update mode: each batch emits the windows it changed, in the order of
// the records that last changed them; the watermark drops them silently.
static void fixed_windows_in_update_mode(void) {
  static window want[MAXW], touched[MAXW];
  weir_test_reset();
  weir_test_set_output_mode(WEIR_UPDATE);
  make_events(5, 7);
  win = weir_sliding(100, 30, &weir_count, NULL);
  size_t m = 0;
  int64_t newest = INT64_MIN;
  for (int i = 0; i < N; i += 7) {
    int to = i + 7 < N ? i + 7 : N;
    size_t t = 0;
    for (int j = i; j < to; j++) {
      fold(want, &m, &evs[j], 100, 30, 0);
      fold(touched, &t, &evs[j], 100, 30, (uint32_t)(j - i));
      newest = evs[j].ts > newest ? evs[j].ts : newest;
    }
    for (size_t a = 0; a < t; a++) {  // the current counts, in (index, start) order
      touched[a].count = find(want, &m, touched[a].key, touched[a].start, 0)->count;
      for (size_t b = a; b > 0; b--) {
        window *x = &touched[b - 1], *y = &touched[b];
        if (x->index < y->index || (x->index == y->index && x->start < y->start)) break;
        window tmp = *x;
        *x = *y, *y = tmp;
      }
    }
    weir_test_result r = run(i, to);
    CHECK(!r.broken && r.len == t, "update: %zu outputs, want %zu (%s)", r.len, t, r.broken ? r.broken : "");
    for (size_t j = 0; j < r.len && j < t; j++) {
      window w = parse(&r.out[j]);
      CHECK(w.key == touched[j].key && w.start == touched[j].start && w.count == touched[j].count &&
                w.index == touched[j].index,
            "update: output %zu is k%d %lld: %lld from %u, want k%d %lld: %lld from %u", j, w.key, (long long)w.start,
            w.count, w.index, touched[j].key, (long long)touched[j].start, touched[j].count, touched[j].index);
    }
    weir_test_free(&r);
    int64_t wm = newest - 60;
    r = weir_test_fire_timers(wm);
    CHECK(!r.broken && !r.len, "update: the watermark emitted %zu", r.len);
    weir_test_free(&r);
    size_t open = 0;
    for (size_t a = 0; a < m; a++) open += want[a].end > wm;
    CHECK(state_len() == open, "update: %zu windows in state, want %zu", state_len(), open);
  }
}

// Complete mode: every batch emits every window, in state key order (by
// start, end, key), with no timers.
static void fixed_windows_in_complete_mode(void) {
  static window want[MAXW];
  weir_test_reset();
  weir_test_set_output_mode(WEIR_COMPLETE);
  make_events(3, 7);
  win = weir_tumbling(100, &weir_count, NULL);
  size_t m = 0;
  for (int i = 0; i < N; i += 7) {
    int to = i + 7 < N ? i + 7 : N;
    for (int j = i; j < to; j++) fold(want, &m, &evs[j], 100, 100, 0);
    qsort(want, m, sizeof *want, by_window);
    window order[MAXW];
    memcpy(order, want, m * sizeof *want);
    for (size_t a = 1; a < m; a++) {  // by (start, key)
      for (size_t b = a; b > 0 && (order[b - 1].start > order[b].start ||
                                   (order[b - 1].start == order[b].start && order[b - 1].key > order[b].key));
           b--) {
        window tmp = order[b - 1];
        order[b - 1] = order[b], order[b] = tmp;
      }
    }
    weir_test_result r = run(i, to);
    CHECK(!r.broken && r.len == m, "complete: %zu outputs, want %zu", r.len, m);
    for (size_t j = 0; j < r.len && j < m; j++) {
      window w = parse(&r.out[j]);
      uint32_t origin = j < (size_t)(to - i) ? (uint32_t)j : (uint32_t)(to - i - 1);
      CHECK(w.key == order[j].key && w.start == order[j].start && w.count == order[j].count && w.index == origin,
            "complete: output %zu", j);
    }
    weir_test_free(&r);
  }
  weir_timer t;
  CHECK(!weir_test_timer_at(0, &t), "complete mode registered timers");
  weir_test_result r = weir_test_fire_timers(INT64_MAX / 2);
  CHECK(!r.len && state_len() == m, "complete mode dropped windows");
  weir_test_free(&r);
}

// More windows than one state scan returns: complete mode pages on.
static void complete_mode_emits_every_window_of_a_large_state(void) {
  static weir_test_in in[600];
  weir_test_reset();
  weir_test_set_output_mode(WEIR_COMPLETE);
  win = weir_tumbling(1, &weir_count, NULL);
  for (int i = 0; i < 600; i++) in[i] = (weir_test_in){.value = "x", .key = "k1", .timestamp = (599 - i) / 2};
  weir_test_result r = weir_test_run(in, 600, NULL);
  CHECK(!r.broken && r.len == 300, "%zu windows", r.len);
  for (size_t j = 0; j < r.len; j++) {
    window w = parse(&r.out[j]);
    CHECK(w.start == (int64_t)j && w.count == 2 && w.index == j, "window %zu: %lld", j, (long long)w.start);
  }
  weir_test_free(&r);
}

static weir_test_result one(const char *key, int64_t ts) {
  weir_test_in in = {.value = "x", .key = key, .timestamp = ts};
  return weir_test_run(&in, 1, NULL);
}

static void expect(const char *what, weir_test_result r, const char *const *values, const uint32_t *origins, size_t n) {
  CHECK(!r.broken && r.len == n, "%s: %zu outputs, want %zu (%s)", what, r.len, n, r.broken ? r.broken : "");
  for (size_t i = 0; i < r.len && i < n; i++) {
    CHECK(SAME(r.out[i].value, values[i]) && r.out[i].origin == origins[i], "%s: %s from %u, want %s from %u", what,
          r.out[i].value.ptr, r.out[i].origin, values[i], origins[i]);
  }
  weir_test_free(&r);
}

// Update mode emits all of a changed key's sessions; the watermark drops
// closed ones; complete mode emits every session, per key.
static void sessions_in_update_and_complete_modes(void) {
  weir_test_reset();
  weir_test_set_output_mode(WEIR_UPDATE);
  win = weir_session(10, &weir_count, NULL);
  weir_test_in in[] = {{.value = "x", .key = "a", .timestamp = 5},
                       {.value = "x", .key = "b", .timestamp = 100},
                       {.value = "x", .key = "a", .timestamp = 0}};
  const char *first[] = {"{\"key\":\"b\",\"start\":100,\"end\":110,\"count\":1}",
                         "{\"key\":\"a\",\"start\":0,\"end\":15,\"count\":2}"};
  expect("sessions/update", weir_test_run(in, 3, NULL), first, (uint32_t[]){1, 2}, 2);
  const char *second[] = {"{\"key\":\"a\",\"start\":0,\"end\":15,\"count\":2}",
                          "{\"key\":\"a\",\"start\":30,\"end\":40,\"count\":1}"};
  expect("sessions/update", one("a", 30), second, (uint32_t[]){0, 0}, 2);
  weir_test_result r = weir_test_fire_timers(20);
  CHECK(!r.len, "update mode emitted at the watermark");
  weir_test_free(&r);
  const char *third[] = {"{\"key\":\"a\",\"start\":30,\"end\":45,\"count\":2}"};
  expect("sessions/update", one("a", 35), third, (uint32_t[]){0}, 1);
  weir_test_reset();
  weir_test_set_output_mode(WEIR_COMPLETE);
  weir_test_result ignored = weir_test_run(in, 3, NULL);
  weir_test_free(&ignored);
  const char *all[] = {"{\"key\":\"a\",\"start\":0,\"end\":15,\"count\":2}",
                       "{\"key\":\"a\",\"start\":50,\"end\":60,\"count\":1}",
                       "{\"key\":\"b\",\"start\":100,\"end\":110,\"count\":1}"};
  expect("sessions/complete", one("a", 50), all, (uint32_t[]){0, 0, 0}, 3);
}

int main(void) {
  fixed_windows_in_append_mode();
  sessions_in_append_mode();
  fixed_windows_in_update_mode();
  fixed_windows_in_complete_mode();
  complete_mode_emits_every_window_of_a_large_state();
  sessions_in_update_and_complete_modes();
  DONE("windows_test");
}
