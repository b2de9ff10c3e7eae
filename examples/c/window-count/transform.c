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
  static const char *const known[] = {"size", NULL};
  const char *why = weir_config_only(config, known);
  if (!why) why = weir_config_duration_ms(config, "size", 10000, &counts.size_ms);
  if (!why && counts.size_ms <= 0) why = "config key `size`: a window lasts 1ms or more";
  return why;
}

WEIR_WINDOWS(counts)
