// weir's C SDK (see weir.h): event-time windows, with the Rust SDK's
// semantics (guest-sdk/src/window) and the Python SDK's state layout (see
// weir_internal.h). A batch reads each fixed window it touches once into a
// table and writes them back with one put-many at its end; the table also
// records which record last changed each window, for update mode.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir_internal.h"

typedef struct {
  uint8_t *key;
  size_t key_len;
  void *acc;  // a fixed window's accumulator; NULL while not in state
  bool loaded, dirty;
  int64_t index;  // the batch's last record that changed it, or -1
} entry;

// The batch's table (open addressing: slots hold entry index + 1) and mode.
static vec entries;
static uint32_t *slots;
static size_t slot_cap;
static weir_output_mode mode;
static vec keybuf, skeybuf;  // scratch

static entry *at(int64_t i) { return (entry *)entries.ptr + i; }

static void reset_table(void) {
  for (size_t i = 0; i < entries.len; i++) {
    free(at(i)->key);
    free(at(i)->acc);
  }
  entries.len = 0;
  if (slots) memset(slots, 0, slot_cap * sizeof *slots);
}

static size_t slot_of(const uint8_t *k, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ k[i]) * 1099511628211ull;
  return (size_t)(h ^ h >> 29) & (slot_cap - 1);
}

// The index of key's entry, made when absent; -1 when out of memory.
static int64_t lookup(weir_output *out, const uint8_t *k, size_t n) {
  if (2 * (entries.len + 1) > slot_cap) {
    size_t cap = slot_cap ? slot_cap * 2 : 64;
    uint32_t *s = calloc(cap, sizeof *s);
    if (!s) {
      out->oom = true;
      return -1;
    }
    free(slots);
    slots = s;
    slot_cap = cap;
    for (size_t i = 0; i < entries.len; i++) {
      size_t j = slot_of(at(i)->key, at(i)->key_len);
      while (slots[j]) j = (j + 1) & (slot_cap - 1);
      slots[j] = (uint32_t)i + 1;
    }
  }
  size_t j = slot_of(k, n);
  for (; slots[j]; j = (j + 1) & (slot_cap - 1)) {
    entry *e = at(slots[j] - 1);
    if (e->key_len == n && memcmp(e->key, k, n) == 0) return slots[j] - 1;
  }
  uint8_t *copy = malloc(n + 1);
  entry *e = copy ? weir_grow(out, &entries, sizeof *e, 1) : NULL;
  if (!e) {
    free(copy);
    out->oom = true;
    return -1;
  }
  memcpy(copy, k, n);
  *e = (entry){.key = copy, .key_len = n, .index = -1};
  slots[j] = (uint32_t)entries.len;
  return (int64_t)entries.len - 1;
}

// Room for n bytes in a scratch buffer (never NULL unless out of memory).
static uint8_t *scratch(weir_output *out, vec *v, size_t n) {
  v->len = 0;
  return weir_grow(out, v, 1, n + 1);
}

static uint8_t *fixed_key(weir_output *out, int64_t start, int64_t end, weir_bytes key) {
  uint8_t *k = scratch(out, &skeybuf, 17 + key.len);
  if (!k) return NULL;
  k[0] = WEIR_FIXED;
  weir_put_time(k + 1, start);
  weir_put_time(k + 9, end);
  memcpy(k + 17, key.ptr, key.len);
  return k;
}

// Read e's stored accumulator once; false when the state is corrupt.
static bool load(const weir_windows *w, weir_output *out, entry *e) {
  if (e->loaded) return true;
  size_t len;
  uint8_t *v = weir_state_get(e->key, e->key_len, &len);
  if (v && len != w->agg->size) {
    free(v);
    weir_broken(out, "corrupt window state (has the aggregate's size changed?)");
    return false;
  }
  if (v && !(e->acc = malloc(weir_acc_stride(w->agg->size)))) out->oom = true;
  if (e->acc) memcpy(e->acc, v, len);
  free(v);
  e->loaded = true;
  return !out->oom;
}

static int64_t slide_of(const weir_windows *w) { return w->slide_ms ? w->slide_ms : w->size_ms; }

static void add_fixed(const weir_windows *w, const weir_record *r, weir_bytes key, weir_output *out) {
  const weir_aggregate *agg = w->agg;
  int64_t size = w->size_ms, slide = slide_of(w), ts = r->timestamp, m = ts % slide;
  int64_t first = ts - (m < 0 ? m + slide : m);
  size_t n = 0, st = weir_acc_stride(agg->size);
  for (int64_t s = first; s + size > ts; s -= slide) n++;
  // Every window's new accumulator first, so a refused record changes none.
  uint8_t *accs = malloc(n * st + 1);
  int64_t *idx = malloc(n * sizeof *idx + 1);
  if (!accs || !idx) out->oom = true;
  for (size_t i = 0; i < n && !out->oom && !out->status; i++) {
    int64_t start = first - (int64_t)i * slide;
    uint8_t *k = fixed_key(out, start, start + size, key);
    if (!k || (idx[i] = lookup(out, k, 17 + key.len)) < 0 || !load(w, out, at(idx[i]))) break;
    void *acc = accs + i * st;
    if (at(idx[i])->acc) {
      memcpy(acc, at(idx[i])->acc, agg->size);
    } else {
      agg->zero(acc);
    }
    agg->add(acc, r, out);
  }
  for (size_t i = 0; i < n && !out->oom && !out->status; i++) {
    entry *e = at(idx[i]);
    bool is_new = !e->acc;
    if (is_new && !(e->acc = malloc(st))) {
      out->oom = true;
      break;
    }
    memcpy(e->acc, accs + i * st, agg->size);
    e->dirty = true;
    e->index = r->index;
    if (is_new && mode != WEIR_COMPLETE) weir_timer_register(true, e->key, e->key_len, weir_get_time(e->key + 9));
  }
  free(accs);
  free(idx);
}

static void add_session(const weir_windows *w, const weir_record *r, weir_bytes key, weir_output *out) {
  const weir_aggregate *agg = w->agg;
  size_t st = weir_acc_stride(agg->size), n = 0, len = 0;
  uint8_t *added = malloc(2 * st), *pool = NULL, *stored = NULL;
  weir_span *s = NULL;
  if (!added) {
    out->oom = true;
    return;
  }
  agg->zero(added);
  agg->add(added, r, out);
  uint8_t *k = out->status ? NULL : scratch(out, &skeybuf, 1 + key.len);
  if (!k) goto done;
  k[0] = WEIR_SESSION;
  memcpy(k + 1, key.ptr, key.len);
  weir_bytes skey = {k, 1 + key.len};
  stored = weir_state_get(k, skey.len, &len);
  if (!(s = weir_sessions_decode(w, out, stored, stored ? len : 0, &n, &pool))) goto done;
  // Sessions the record bridges merge in start order, its contribution
  // last (arrival order); the merged one goes after kept ones that start
  // no later.
  int64_t ts = r->timestamp, gap = w->gap_ms;
  weir_span merged = {ts, ts + gap, added + st};
  agg->zero(merged.acc);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i].start <= ts + gap && ts <= s[i].end) {
      if (mode != WEIR_COMPLETE) weir_timer_delete(true, k, skey.len, s[i].end);
      merged.start = s[i].start < merged.start ? s[i].start : merged.start;
      merged.end = s[i].end > merged.end ? s[i].end : merged.end;
      agg->merge(merged.acc, s[i].acc);
    } else {
      s[kept++] = s[i];
    }
  }
  agg->merge(merged.acc, added);
  if (mode != WEIR_COMPLETE) weir_timer_register(true, k, skey.len, merged.end);
  size_t pos = kept;
  while (pos > 0 && s[pos - 1].start > merged.start) pos--;
  memmove(s + pos + 1, s + pos, (kept - pos) * sizeof *s);
  s[pos] = merged;
  weir_sessions_store(w, out, skey, s, kept + 1);
  int64_t i = mode == WEIR_UPDATE ? lookup(out, k, skey.len) : -1;
  if (i >= 0) at(i)->index = r->index;
done:
  free(added);
  free(stored);
  free(s);
  free(pool);
}

static char why[160];

static const char *not_positive(const char *name, int64_t v) {
  snprintf(why, sizeof why, "window %s must be a positive number of ms, not %lld", name, (long long)v);
  return why;
}

static const char *check(const weir_windows *w) {
  const weir_aggregate *a = w->agg;
  if (!a || !a->zero || !a->add || !a->result) return "windows need an aggregate with zero, add and result";
  if (!w->gap_ms) {
    if (w->size_ms < 1) return not_positive("size", w->size_ms);
    return w->slide_ms < 0 ? not_positive("slide", w->slide_ms) : NULL;
  }
  if (w->gap_ms < 0) return not_positive("gap", w->gap_ms);
  if (w->size_ms || w->slide_ms) return "session windows have a gap, not a size or slide";
  return a->merge ? NULL : "session windows need an aggregate with merge";
}

static bool begin(const weir_windows *w, weir_output *out) {
  reset_table();
  const char *bad = check(w);
  if (bad) {
    weir_broken(out, bad);
    return false;
  }
  mode = weir_query_output_mode();
  if (mode != WEIR_COMPLETE && !weir_event_time()) {
    snprintf(why, sizeof why,
             "windowed aggregation in %s mode needs an [event-time] section: windows close when the watermark "
             "passes them",
             mode == WEIR_APPEND ? "append" : "update");
    weir_broken(out, why);
    return false;
  }
  return true;
}

static void add(const weir_windows *w, const weir_record *r, weir_output *out) {
  size_t before = out->count;
  weir_bytes key = r->key;
  if (w->key_by ? !w->key_by(r, &key, out) : !r->has_key) {
    if (!out->status) weir_bad(out, w->key_by ? "no key to window by" : "record has no key to window by");
    return;
  }
  // A copy: the user's add may reuse the buffer key_by returned.
  uint8_t *k = out->status ? NULL : scratch(out, &keybuf, key.len);
  if (!k) return;
  if (key.len) memcpy(k, key.ptr, key.len);
  key.ptr = k;
  if (w->gap_ms) {
    add_session(w, r, key, out);
  } else {
    add_fixed(w, r, key, out);
  }
  if (!out->status && out->count != before) weir_broken(out, "a window's key_by and aggregate add must not emit");
}

// Update mode's order: by the last record that changed the window, then key.
static int by_index(const void *a, const void *b) {
  const entry *x = at(*(const int64_t *)a), *y = at(*(const int64_t *)b);
  if (x->index != y->index) return x->index < y->index ? -1 : 1;
  size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
  int c = memcmp(x->key, y->key, n);
  return c ? c : (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

static void emit_key(const weir_windows *w, weir_output *out, weir_bytes skey, const int64_t *close_upto,
                     weir_output_mode m) {
  size_t len;
  uint8_t *v = weir_state_get(skey.ptr, skey.len, &len);
  if (v) weir_windows_emit_stored(w, out, skey, v, len, close_upto, m);
  free(v);
}

static void flush(const weir_windows *w, weir_output *out) {
  vec dirty = {0};
  for (size_t i = 0; i < entries.len; i++) {
    entry *e = at(i);
    weir_transform_state_entry_t kv = {{e->key, e->key_len}, {e->acc, w->agg->size}};
    if (e->dirty) PUSH(out, dirty, weir_transform_state_entry_t, kv);
  }
  weir_transform_state_list_entry_t list = {dirty.ptr, dirty.len};
  if (list.len && !out->oom) weir_transform_state_put_many(&list);
  free(dirty.ptr);
}

static void end(const weir_windows *w, weir_output *out, const weir_transform_types_batch_t *b) {
  size_t n = b->value_ends.len;
  flush(w, out);
  if (n && mode == WEIR_UPDATE) {
    vec order = {0};
    for (int64_t i = 0; i < (int64_t)entries.len; i++) {
      if (at(i)->index >= 0) PUSH(out, order, int64_t, i);
    }
    if (order.len) qsort(order.ptr, order.len, sizeof(int64_t), by_index);
    for (size_t j = 0; j < order.len && !out->status && !out->oom; j++) {
      entry *e = at(((int64_t *)order.ptr)[j]);
      weir_record r = weir_record_of(b, (size_t)e->index);
      out->r = &r;
      weir_bytes skey = {e->key, e->key_len};
      emit_key(w, out, skey, NULL, mode);
    }
    free(order.ptr);
  } else if (n && mode == WEIR_COMPLETE) {
    const uint8_t tag = w->gap_ms ? WEIR_SESSION : WEIR_FIXED;
    full_transformer_list_u8_t prefix = {(uint8_t *)&tag, 1}, after = {0};
    size_t j = 0;
    for (bool more = true; more && !out->status && !out->oom;) {
      weir_transform_state_list_entry_t page;
      weir_transform_state_scan_prefix(&prefix, j ? &after : NULL, 256, &page);
      for (size_t i = 0; i < page.len && !out->status; i++, j++) {
        weir_transform_state_entry_t *kv = &page.ptr[i];
        weir_record r = weir_record_of(b, j < n ? j : n - 1);
        out->r = &r;
        weir_bytes skey = {kv->key.ptr, kv->key.len};
        weir_windows_emit_stored(w, out, skey, kv->value.ptr, kv->value.len, NULL, mode);
      }
      more = page.len == 256;
      free(after.ptr);
      after = (full_transformer_list_u8_t){0};
      if (more) {  // keep the last key, to page on after it
        after = page.ptr[page.len - 1].key;
        page.ptr[page.len - 1].key = (full_transformer_list_u8_t){0};
      }
      weir_transform_state_list_entry_free(&page);
    }
    free(after.ptr);
  }
  reset_table();
}

static void on_timer(const weir_windows *w, const weir_timer *t, weir_output *out) {
  const uint8_t tag = w->gap_ms ? WEIR_SESSION : WEIR_FIXED;
  if (!t->event_time || !t->key.len || t->key.ptr[0] != tag) {
    snprintf(why, sizeof why, "unexpected timer at %lld", (long long)t->time);
    weir_broken(out, why);
    return;
  }
  weir_output_mode m = weir_query_output_mode();
  if (tag == WEIR_FIXED) {
    if (m == WEIR_APPEND) emit_key(w, out, t->key, NULL, m);
    weir_state_delete(t->key.ptr, t->key.len);
  } else {
    int64_t wm;
    if (!weir_watermark(&wm)) wm = t->time;
    emit_key(w, out, t->key, &wm, m);
  }
}

const struct weir_windows_impl weir_windows_impl = {check, begin, add, end, on_timer};

weir_windows weir_tumbling(int64_t size_ms, const weir_aggregate *agg, weir_key_by key_by) {
  return (weir_windows){.size_ms = size_ms, .slide_ms = size_ms, .agg = agg, .key_by = key_by};
}

weir_windows weir_sliding(int64_t size_ms, int64_t slide_ms, const weir_aggregate *agg, weir_key_by key_by) {
  return (weir_windows){.size_ms = size_ms, .slide_ms = slide_ms, .agg = agg, .key_by = key_by};
}

weir_windows weir_session(int64_t gap_ms, const weir_aggregate *agg, weir_key_by key_by) {
  return (weir_windows){.gap_ms = gap_ms, .agg = agg, .key_by = key_by};
}
