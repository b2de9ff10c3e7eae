// weir's C SDK (see weir.h): how windows live in keyed state (layout in
// weir_internal.h) and how they are emitted, with the Count aggregate and
// the JSON string escaping its result shares with the other SDKs.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir_internal.h"

size_t weir_acc_stride(size_t size) { return size ? (size + 15) & ~(size_t)15 : 16; }

void weir_put_time(uint8_t *p, int64_t t) {
  uint64_t u = (uint64_t)t ^ (1ull << 63);
  for (int i = 7; i >= 0; i--, u >>= 8) p[i] = (uint8_t)u;
}

int64_t weir_get_time(const uint8_t *p) {
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u = u << 8 | p[i];
  return (int64_t)(u ^ (1ull << 63));
}

weir_span *weir_sessions_decode(const weir_windows *w, weir_output *out, const uint8_t *v, size_t len, size_t *n,
                                uint8_t **pool) {
  size_t size = w->agg->size, rec = 16 + size, st = weir_acc_stride(size);
  if (len % rec) {
    weir_broken(out, "corrupt session state (has the aggregate's size changed?)");
    return NULL;
  }
  *n = len / rec;
  weir_span *s = malloc((*n + 1) * sizeof *s);
  *pool = malloc((*n + 1) * st);
  if (!s || !*pool) {
    free(s);
    free(*pool);
    out->oom = true;
    return NULL;
  }
  for (size_t i = 0; i < *n; i++, v += rec) {
    s[i] = (weir_span){weir_get_time(v), weir_get_time(v + 8), *pool + i * st};
    memcpy(s[i].acc, v + 16, size);
  }
  return s;
}

void weir_sessions_store(const weir_windows *w, weir_output *out, weir_bytes skey, const weir_span *s, size_t n) {
  if (!n) {
    weir_state_delete(skey.ptr, skey.len);
    return;
  }
  size_t rec = 16 + w->agg->size;
  uint8_t *v = malloc(n * rec);
  if (!v) {
    out->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    weir_put_time(v + i * rec, s[i].start);
    weir_put_time(v + i * rec + 8, s[i].end);
    memcpy(v + i * rec + 16, s[i].acc, w->agg->size);
  }
  weir_state_put(skey.ptr, skey.len, v, n * rec);
  free(v);
}

// Emit one window: the aggregate's result emits its value, the window
// gives it key and timestamp.
static void emit(const weir_windows *w, weir_output *out, weir_bytes key, int64_t start, int64_t end, const void *acc) {
  size_t before = out->count;
  w->agg->result(key, start, end, acc, out);
  if (out->status == BAD) out->status = BROKEN;  // no record to refuse
  if (out->status || out->count == before) return;
  if (out->count > before + 1) {
    weir_broken(out, "a weir_aggregate's result emits at most one value per window");
    return;
  }
  weir_set_key(out, key.len ? key.ptr : (const uint8_t *)"", key.len);
  weir_set_timestamp(out, end - 1);
}

void weir_windows_emit_stored(const weir_windows *w, weir_output *out, weir_bytes skey, const uint8_t *v, size_t len,
                              const int64_t *close_upto, weir_output_mode mode) {
  if (skey.ptr[0] == WEIR_FIXED) {
    // Copied, for the accumulator's alignment.
    void *acc = skey.len >= 17 && len == w->agg->size ? malloc(weir_acc_stride(len)) : NULL;
    if (!acc) {
      weir_broken(out, "corrupt window state (has the aggregate's size changed?)");
      return;
    }
    memcpy(acc, v, len);
    weir_bytes key = {skey.ptr + 17, skey.len - 17};
    emit(w, out, key, weir_get_time(skey.ptr + 1), weir_get_time(skey.ptr + 9), acc);
    free(acc);
    return;
  }
  size_t n, open = 0;
  uint8_t *pool;
  weir_span *s = weir_sessions_decode(w, out, v, len, &n, &pool);
  if (!s) return;
  weir_bytes key = {skey.ptr + 1, skey.len - 1};
  for (size_t i = 0; i < n && !out->status; i++) {
    if (close_upto && s[i].end > *close_upto) {
      s[open++] = s[i];
    } else if (!close_upto || mode == WEIR_APPEND) {
      emit(w, out, key, s[i].start, s[i].end, s[i].acc);
    }
  }
  if (close_upto && !out->status) weir_sessions_store(w, out, skey, s, open);
  free(s);
  free(pool);
}

// The length of the UTF-8 sequence at p (n > 0 bytes) and whether it is a
// character; an invalid one spans the longest start of a valid sequence
// (at least a byte), the part Rust's from_utf8_lossy replaces with U+FFFD.
static size_t utf8_seq(const uint8_t *p, size_t n, bool *valid) {
  uint8_t c = p[0], lo = 0x80, hi = 0xBF;
  size_t need;
  *valid = true;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    lo = c == 0xE0 ? 0xA0 : lo;
    hi = c == 0xED ? 0x9F : hi;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    lo = c == 0xF0 ? 0x90 : lo;
    hi = c == 0xF4 ? 0x8F : hi;
  } else {
    *valid = false;
    return 1;
  }
  for (size_t i = 1; i <= need; i++, lo = 0x80, hi = 0xBF) {
    if (i >= n || p[i] < lo || p[i] > hi) {
      *valid = false;
      return i;
    }
  }
  return need + 1;
}

size_t weir_json_string(uint8_t *dst, weir_bytes s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
#define PUT(c) (dst ? (void)(dst[n] = (uint8_t)(c)) : (void)0, n++)
  PUT('"');
  for (size_t i = 0, len; i < s.len; i += len) {
    bool valid;
    uint8_t c = s.ptr[i];
    len = utf8_seq(s.ptr + i, s.len - i, &valid);
    if (!valid) {
      PUT(0xEF), PUT(0xBF), PUT(0xBD);
    } else if (c == '"' || c == '\\') {
      PUT('\\'), PUT(c);
    } else if (c < 0x20) {
      PUT('\\'), PUT('u'), PUT('0'), PUT('0'), PUT(hex[c >> 4]), PUT(hex[c & 15]);
    } else {
      for (size_t j = 0; j < len; j++) PUT(s.ptr[i + j]);
    }
  }
  PUT('"');
#undef PUT
  return n;
}

static void count_zero(void *acc) { *(int64_t *)acc = 0; }

static void count_add(void *acc, const weir_record *r, weir_output *out) {
  (void)r;
  (void)out;
  ++*(int64_t *)acc;
}

static void count_merge(void *into, const void *other) { *(int64_t *)into += *(const int64_t *)other; }

static void count_result(weir_bytes key, int64_t start, int64_t end, const void *acc, weir_output *out) {
  char tail[96];
  int t = snprintf(tail, sizeof tail, ",\"start\":%lld,\"end\":%lld,\"count\":%lld}", (long long)start, (long long)end,
                   (long long)*(const int64_t *)acc);
  size_t k = weir_json_string(NULL, key);
  uint8_t *v = weir_emit_reserve(out, 7 + k + (size_t)t);
  if (!v) return;
  memcpy(v, "{\"key\":", 7);
  weir_json_string(v + 7, key);
  memcpy(v + 7 + k, tail, (size_t)t);
}

const weir_aggregate weir_count = {sizeof(int64_t), count_zero, count_add, count_merge, count_result};
