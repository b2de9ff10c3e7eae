// Windowed count per key: counts JSON records per `key` field in tumbling
// event-time windows of `size` (default 10s; e.g. size = "1s" or "500ms")
// with the SDK's window helpers; each window's count is emitted once, when
// the watermark passes its end (append mode), as
// {"key":"user-1","start":0,"end":10000,"count":42} keyed by the key. The
// Rust `window-count` example does the same (the golden suite checks they
// agree) on flat JSON records with a string key. The pipeline needs
// [event-time] and [state] key-field = "key". `weir new --lang c
// --template window NAME` starts a project from this file.

#include <stdlib.h>
#include <string.h>

#include "weir.h"

// The string value of the record's "key" field (escapes kept as they are).
static bool json_key(const weir_record *r, weir_bytes *key, weir_output *out) {
  static const char field[] = "\"key\":\"";
  const uint8_t *v = r->value.ptr;
  size_t len = r->value.len, f = sizeof field - 1, i = 0;
  while (i + f <= len && memcmp(v + i, field, f) != 0) i++;
  if (i + f > len) {
    weir_bad(out, "no string field key");
    return false;
  }
  size_t start = i + f, end = start;
  while (end < len && v[end] != '"') end++;
  *key = (weir_bytes){v + start, end - start};
  return true;
}

static weir_windows counts = {.size_ms = 10000, .agg = &weir_count, .key_by = json_key};

const char *weir_init(const weir_config *config) {
  for (size_t i = 0; i < config->len; i++) {
    const full_transformer_string_t *k = &config->pairs[i].f0;
    if (k->len != 4 || memcmp(k->ptr, "size", 4) != 0) return "unknown config key (known: size)";
  }
  counts.size_ms = 10000;
  char *v = weir_config_get(config, "size");
  if (!v) return NULL;
  char *unit;
  long long n = strtoll(v, &unit, 10);
  int64_t scale = !strcmp(unit, "ms") ? 1 : !strcmp(unit, "s") ? 1000 : !strcmp(unit, "m") ? 60000 : 0;
  free(v);
  if (n <= 0 || scale == 0) return "size: not a duration (e.g. 500ms, 10s, 2m)";
  counts.size_ms = n * scale;
  return NULL;
}

WEIR_WINDOWS(counts)
