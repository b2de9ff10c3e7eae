// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s; e.g. size = "1s" or "500ms"),
// in keyed state; each window's count is emitted once, when the watermark
// passes its end, as {"key":"user-1","start":0,"end":10000,"count":42}
// keyed by the key. The Rust `window-count` example does the same (the
// golden suite checks they agree) on flat JSON records with a string key.
// The pipeline needs [event-time] and [state] key-field = "key". Build: copy
// over src/transform.c of a `weir new --lang c` project, then `weir build`.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

static int64_t size = 10000;

const char *weir_init(const weir_config *config) {
  for (size_t i = 0; i < config->len; i++) {
    const full_transformer_string_t *k = &config->pairs[i].f0;
    if (k->len != 4 || memcmp(k->ptr, "size", 4) != 0) return "unknown config key (known: size)";
  }
  char *v = weir_config_get(config, "size");
  if (!v) return NULL;
  char *unit;
  long long n = strtoll(v, &unit, 10);
  int64_t scale = !strcmp(unit, "ms") ? 1 : !strcmp(unit, "s") ? 1000 : !strcmp(unit, "m") ? 60000 : 0;
  free(v);
  if (n <= 0 || scale == 0) return "size: not a duration (e.g. 500ms, 10s, 2m)";
  size = n * scale;
  return NULL;
}

// The state key of key's window starting at start: key, NUL, start.
static size_t slot(char *buf, size_t cap, weir_bytes key, int64_t start) {
  size_t n = key.len < cap - 24 ? key.len : cap - 24;
  memcpy(buf, key.ptr, n);
  buf[n++] = 0;
  return n + (size_t)snprintf(buf + n, cap - n, "%lld", (long long)start);
}

static long long stored(const char *k, size_t n) {
  size_t len;
  uint8_t *v = weir_state_get(k, n, &len);
  if (!v) return 0;
  char num[24] = {0};
  memcpy(num, v, len < sizeof num - 1 ? len : sizeof num - 1);
  free(v);
  return atoll(num);
}

static void count(const weir_record *r, weir_output *out) {
  // The string value of "key".
  static const char field[] = "\"key\":\"";
  const uint8_t *v = r->value.ptr;
  size_t len = r->value.len, f = sizeof field - 1, i = 0;
  while (i + f <= len && memcmp(v + i, field, f) != 0) i++;
  if (i + f > len) {
    weir_bad(out, "no string field key");
    return;
  }
  size_t start_of_key = i + f, end = start_of_key;
  while (end < len && v[end] != '"') end++;
  weir_bytes key = {v + start_of_key, end - start_of_key};
  int64_t start = r->timestamp - (r->timestamp % size + size) % size;
  char k[256];
  size_t n = slot(k, sizeof k, key, start);
  char num[24];
  int m = snprintf(num, sizeof num, "%lld", stored(k, n) + 1);
  weir_state_put(k, n, num, (size_t)m);
  weir_timer_register(true, key.ptr, key.len, start + size);
}

void weir_on_timer(const weir_timer *t, weir_output *out) {
  int64_t start = t->time - size;
  char k[256];
  size_t n = slot(k, sizeof k, t->key, start);
  long long c = stored(k, n);
  weir_state_delete(k, n);
  char json[512];
  int m = snprintf(json, sizeof json, "{\"key\":\"%.*s\",\"start\":%lld,\"end\":%lld,\"count\":%lld}",
                   (int)t->key.len, (const char *)t->key.ptr, (long long)start, (long long)t->time, c);
  weir_emit(out, json, (size_t)m);
}

WEIR_FLAT_MAP(count)
