// weir's C SDK (see weir.h): reading the config, and weir's log and
// metrics, with the same names and rules as the other SDKs' (Python's
// `config.only`, `duration_ms`, `log_info`, `counter_add` ...).

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

char *weir_config_get(const weir_config *c, const char *key) {
  size_t n = strlen(key);
  for (size_t i = 0; i < c->len; i++) {
    const full_transformer_string_t *k = &c->pairs[i].f0, *v = &c->pairs[i].f1;
    if (k->len == n && memcmp(k->ptr, key, n) == 0) {
      char *s = malloc(v->len + 1);
      if (!s) return NULL;
      memcpy(s, v->ptr, v->len);
      s[v->len] = 0;
      return s;
    }
  }
  return NULL;
}

// The reason weir_config_only and weir_config_duration_ms give; weir_init
// returns it, and weir copies it before the next call.
static char why[256];

const char *weir_config_only(const weir_config *c, const char *const *known) {
  for (size_t i = 0; i < c->len; i++) {
    const full_transformer_string_t *k = &c->pairs[i].f0;
    bool ok = false;
    for (const char *const *n = known; *n && !ok; n++) ok = strlen(*n) == k->len && !memcmp(*n, k->ptr, k->len);
    if (ok) continue;
    int at = snprintf(why, sizeof why, "unknown config key `%.*s` (known:", (int)(k->len > 64 ? 64 : k->len),
                      (const char *)k->ptr);
    for (const char *const *n = known; *n && at > 0 && (size_t)at < sizeof why; n++)
      at += snprintf(why + at, sizeof why - (size_t)at, "%s %s", n == known ? "" : ",", *n);
    if (!*known && at > 0 && (size_t)at < sizeof why) at += snprintf(why + at, sizeof why - (size_t)at, " none");
    if (at > 0 && (size_t)at < sizeof why) snprintf(why + at, sizeof why - (size_t)at, ")");
    return why;
  }
  return NULL;
}

const char *weir_config_duration_ms(const weir_config *c, const char *key, int64_t fallback, int64_t *ms) {
  char *v = weir_config_get(c, key);
  *ms = fallback;
  if (!v) return NULL;
  static const struct {
    const char *unit;
    int64_t scale;
  } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  size_t len = strlen(v), digits = 0;
  while (digits < len && v[digits] >= '0' && v[digits] <= '9') digits++;
  for (size_t u = 0; digits > 0 && digits <= 15 && u < sizeof units / sizeof *units; u++) {
    if (strcmp(v + digits, units[u].unit) != 0) continue;
    *ms = strtoll(v, NULL, 10) * units[u].scale;
    free(v);
    return NULL;
  }
  snprintf(why, sizeof why, "config key `%s`: `%.64s` is not a duration (e.g. 500ms, 10s, 2m, 1h)", key, v);
  free(v);
  return why;
}

static void log_at(weir_transform_log_level_t level, const char *msg) {
  full_transformer_string_t m = {(uint8_t *)msg, strlen(msg)};
  weir_transform_log_log(level, &m);
}

void weir_log_debug(const char *msg) { log_at(WEIR_TRANSFORM_LOG_LEVEL_DEBUG, msg); }
void weir_log_info(const char *msg) { log_at(WEIR_TRANSFORM_LOG_LEVEL_INFO, msg); }
void weir_log_warn(const char *msg) { log_at(WEIR_TRANSFORM_LOG_LEVEL_WARN, msg); }
void weir_log_error(const char *msg) { log_at(WEIR_TRANSFORM_LOG_LEVEL_ERROR, msg); }

void weir_counter_add(const char *name, uint64_t delta) {
  full_transformer_string_t n = {(uint8_t *)name, strlen(name)};
  weir_transform_metrics_counter_add(&n, delta);
}

void weir_gauge_set(const char *name, double value) {
  full_transformer_string_t n = {(uint8_t *)name, strlen(name)};
  weir_transform_metrics_gauge_set(&n, value);
}
