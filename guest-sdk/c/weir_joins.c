// weir's C SDK (see weir.h): stream-stream joins. A row lives in keyed
// state under 'J', its side ('l' or 'r'), the join key's length (4 bytes,
// big-endian) and bytes, its event time and source offset (8 bytes each,
// big-endian with the sign bit flipped) and source partition (4 bytes), as
// a matched flag byte and the record's value: the Rust SDK's layout, so
// one key's rows of one side in a time range are one state scan.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir_internal.h"

enum { TAG = 'J', LEFT = 'l', RIGHT = 'r' };

// The side of the batch being run (0: not known yet), and whether the
// pipeline's settings were checked.
static int batch_side;
static bool checked;

static bool keeps(const weir_join *j, int side) {
  return j->kind == WEIR_FULL_OUTER || (j->kind == WEIR_LEFT_OUTER && side == LEFT) ||
         (j->kind == WEIR_RIGHT_OUTER && side == RIGHT);
}

static const char *check(const weir_join *j) {
  checked = false;  // the pipeline's settings, at the first batch after init
  if (!j->left || !j->right) return "a weir_join names its two sources (.left and .right)";
  if (!strcmp(j->left, j->right)) return "a join reads two sources, and both sides are the same";
  if (j->before_ms < 0 || j->after_ms < 0) return "a join's range is a number of ms >= 0 on each side";
  return NULL;
}

static bool begin(const weir_join *j, weir_output *out) {
  batch_side = 0;
  if (!checked) {
    if (!weir_event_time()) {
      weir_broken(out, "a join needs an [event-time] section: rows leave state when the watermark passes them");
      return false;
    }
    if (weir_query_output_mode() != WEIR_APPEND) {
      weir_broken(out, "a join emits each row once: it needs output-mode = \"append\"");
      return false;
    }
    checked = true;
  }
  (void)j;
  return true;
}

// The side of the current batch's source; 0 (the transform broken) when
// it is neither.
static int side_of(const weir_join *j, weir_output *out) {
  if (batch_side) return batch_side;
  char *s = weir_source();
  if (!s) {
    weir_broken(out, "the host did not say which source this batch came from");
    return 0;
  }
  batch_side = !strcmp(s, j->left) ? LEFT : !strcmp(s, j->right) ? RIGHT : 0;
  if (!batch_side) {
    char why[320];
    snprintf(why, sizeof why,
             "a record from source `%.64s`, which this join does not read: it joins `%.64s` with `%.64s` (check the "
             "[[source]] names)",
             s, j->left, j->right);
    weir_broken(out, why);
  }
  free(s);
  return batch_side;
}

// 'J' side len(key) key: the start of side's rows of key.
static uint8_t *prefix(int side, weir_bytes key, size_t extra, size_t *len) {
  uint8_t *p = malloc(6 + key.len + extra);
  if (!p) return NULL;
  p[0] = TAG;
  p[1] = (uint8_t)side;
  for (int i = 0; i < 4; i++) p[2 + i] = (uint8_t)(key.len >> (24 - 8 * i));
  if (key.len) memcpy(p + 6, key.ptr, key.len);
  *len = 6 + key.len;
  return p;
}

// A row key's side, join key and time; false when it is not a row.
static bool parse(weir_bytes k, int *side, weir_bytes *key, int64_t *ts) {
  if (k.len < 6 || k.ptr[0] != TAG || (k.ptr[1] != LEFT && k.ptr[1] != RIGHT)) return false;
  size_t n = (size_t)k.ptr[2] << 24 | (size_t)k.ptr[3] << 16 | (size_t)k.ptr[4] << 8 | k.ptr[5];
  if (k.len < 14 + n) return false;
  *side = k.ptr[1];
  *key = (weir_bytes){k.ptr + 6, n};
  *ts = weir_get_time(k.ptr + 6 + n);
  return true;
}

static void emit(const weir_join *j, weir_output *out, weir_bytes key, const weir_join_row *l,
                 const weir_join_row *r, int64_t ts) {
  weir_joined pair = {key, l, r};
  size_t before = out->count;
  if (j->output) {
    j->output(&pair, out);
  } else {
    size_t ln = l ? l->value.len : 4, rn = r ? r->value.len : 4;
    uint8_t *v = weir_emit_reserve(out, 8 + ln + 9 + rn + 1);
    if (!v) return;
    memcpy(v, "{\"left\":", 8);
    memcpy(v + 8, l ? l->value.ptr : (const uint8_t *)"null", ln);
    memcpy(v + 8 + ln, ",\"right\":", 9);
    memcpy(v + 17 + ln, r ? r->value.ptr : (const uint8_t *)"null", rn);
    v[17 + ln + rn] = '}';
  }
  if (out->status || out->count == before) return;
  weir_set_key(out, key.len ? key.ptr : (const uint8_t *)"", key.len);
  weir_set_timestamp(out, ts);
}

static void add(const weir_join *j, const weir_record *r, weir_output *out) {
  int side = side_of(j, out);
  if (!side) return;
  weir_key_by key_by = side == LEFT ? j->left_key : j->right_key;
  weir_bytes key = r->key;
  if (key_by ? !key_by(r, &key, out) : !r->has_key) {
    if (!out->status) weir_bad(out, key_by ? "no key to join on" : "record has no key to join on");
    return;
  }
  // The other side's times this row matches; once the watermark passes hi
  // no row to come can match, and the row leaves state.
  int64_t ts = r->timestamp;
  int other = side == LEFT ? RIGHT : LEFT;
  int64_t lo = ts - (side == LEFT ? j->before_ms : j->after_ms);
  int64_t hi = ts + (side == LEFT ? j->after_ms : j->before_ms);
  size_t plen;
  uint8_t *start = prefix(other, key, 8, &plen), *end = prefix(other, key, 8, &plen);
  size_t own_len;
  uint8_t *own = prefix(side, key, 20, &own_len);
  if (!start || !end || !own) {
    free(start), free(end), free(own);
    out->oom = true;
    return;
  }
  weir_put_time(start + plen, lo);
  weir_put_time(end + plen, hi + 1);
  full_transformer_list_u8_t from = {start, plen + 8}, to = {end, plen + 8};
  bool matched = false, mark = keeps(j, other);
  for (bool more = true; more && !out->status && !out->oom;) {
    weir_transform_state_list_entry_t page;
    weir_transform_state_scan(&from, &to, 256, &page);
    for (size_t i = 0; i < page.len && !out->status; i++) {
      weir_transform_state_entry_t *e = &page.ptr[i];
      int s;
      weir_bytes k;
      int64_t ots;
      if (!e->value.len || !parse((weir_bytes){e->key.ptr, e->key.len}, &s, &k, &ots)) continue;
      matched = true;
      weir_join_row mine = {r->value, ts}, theirs = {{e->value.ptr + 1, e->value.len - 1}, ots};
      int64_t at = ts > ots ? ts : ots;
      if (side == LEFT) {
        emit(j, out, key, &mine, &theirs, at);
      } else {
        emit(j, out, key, &theirs, &mine, at);
      }
      if (mark && e->value.ptr[0] != 1) {
        e->value.ptr[0] = 1;
        weir_state_put(e->key.ptr, e->key.len, e->value.ptr, e->value.len);
      }
    }
    more = page.len == 256;
    if (more) {  // page on from just after the last key
      weir_transform_state_entry_t *e = &page.ptr[page.len - 1];
      uint8_t *next = realloc(from.ptr == start ? NULL : from.ptr, e->key.len + 1);
      if (!next) {
        out->oom = true;
      } else {
        memcpy(next, e->key.ptr, e->key.len);
        next[e->key.len] = 0;
        from = (full_transformer_list_u8_t){next, e->key.len + 1};
      }
    }
    weir_transform_state_list_entry_free(&page);
  }
  if (from.ptr != start) free(from.ptr);
  free(start), free(end);
  if (!out->status && !out->oom) {
    weir_put_time(own + own_len, ts);
    for (int i = 0; i < 4; i++) own[own_len + 8 + i] = (uint8_t)(r->partition >> (24 - 8 * i));
    weir_put_time(own + own_len + 12, r->offset);
    uint8_t *v = malloc(1 + r->value.len);
    if (!v) {
      out->oom = true;
    } else {
      v[0] = matched;
      if (r->value.len) memcpy(v + 1, r->value.ptr, r->value.len);
      weir_state_put(own, own_len + 20, v, 1 + r->value.len);
      weir_timer_register(true, own, own_len + 20, hi + 1);
      free(v);
    }
  }
  free(own);
}

static void on_timer(const weir_join *j, const weir_timer *t, weir_output *out) {
  int side;
  weir_bytes key;
  int64_t ts;
  if (!t->event_time || !parse(t->key, &side, &key, &ts)) {
    weir_broken(out, "a timer that is not the join's fired");
    return;
  }
  if (keeps(j, side)) {
    size_t n;
    uint8_t *v = weir_state_get(t->key.ptr, t->key.len, &n);
    if (v && n && v[0] != 1) {
      weir_join_row row = {{v + 1, n - 1}, ts};
      emit(j, out, key, side == LEFT ? &row : NULL, side == RIGHT ? &row : NULL, ts);
    }
    free(v);
  }
  weir_state_delete(t->key.ptr, t->key.len);
}

const struct weir_join_impl weir_join_impl = {check, begin, add, on_timer};
