// weir's C SDK (see weir.h): the output columns, built under the
// contract's rules (wit/transform.wit): an optional column stays empty
// while every record has its default there, and is back-filled at the
// first record that differs.

#include <stdlib.h>
#include <string.h>

#include "weir_internal.h"

// Room for n more elements of size elem; NULL (and out->oom) when out of memory.
void *weir_grow(weir_output *out, vec *v, size_t elem, size_t n) {
  if (v->len + n > v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 64;
    while (cap < v->len + n) cap *= 2;
    void *p = realloc(v->ptr, cap * elem);
    if (!p) {
      out->oom = true;
      return NULL;
    }
    v->ptr = p;
    v->cap = cap;
  }
  void *at = (uint8_t *)v->ptr + v->len * elem;
  v->len += n;
  return at;
}

static void fill_u32(weir_output *out, vec *v, size_t n, uint32_t x) {
  while (v->len < n) PUSH(out, *v, uint32_t, x);
}
static void fill_bool(weir_output *out, vec *v, size_t n, bool x) {
  while (v->len < n) PUSH(out, *v, bool, x);
}

static void set_reason(weir_output *out, int status, const char *reason) {
  if (out->status) return;
  out->status = status;
  out->reason = strdup(reason ? reason : "");
}

void weir_bad(weir_output *out, const char *reason) { set_reason(out, BAD, reason); }
void weir_broken(weir_output *out, const char *reason) { set_reason(out, BROKEN, reason); }

static uint32_t route_of(weir_output *out, const char *name) {
  if (!name) return 0;
  full_transformer_string_t *names = out->outputs.ptr;
  size_t n = strlen(name);
  for (size_t i = 0; i < out->outputs.len; i++) {
    if (names[i].len == n && memcmp(names[i].ptr, name, n) == 0) return (uint32_t)i + 1;
  }
  full_transformer_string_t *s = weir_grow(out, &out->outputs, sizeof *s, 1);
  if (!s) return 0;
  full_transformer_string_dup(s, name);
  return (uint32_t)out->outputs.len;
}

static void push_key(weir_output *out, size_t n, const void *key, size_t len, bool has) {
  if (!has && !out->keys_on) return;
  out->keys_on = true;
  fill_u32(out, &out->key_ends, n, (uint32_t)out->keys.len);
  fill_bool(out, &out->has_key, n, false);
  uint8_t *k = weir_grow(out, &out->keys, 1, len);
  if (k && len) memcpy(k, key, len);
  PUSH(out, out->key_ends, uint32_t, (uint32_t)out->keys.len);
  PUSH(out, out->has_key, bool, has);
}

// Append one output record of the current input record; returns where its
// len value bytes go (NULL for a tombstone, or when out of memory).
static uint8_t *push(weir_output *out, const char *output, size_t len, bool has_value) {
  const weir_record *r = out->r;
  size_t n = out->count;
  if (!has_value || out->values_on) {
    out->values_on = true;
    fill_bool(out, &out->has_value, n, true);
    PUSH(out, out->has_value, bool, has_value);
  }
  uint8_t *v = weir_grow(out, &out->values, 1, has_value ? len : 0);
  PUSH(out, out->value_ends, uint32_t, (uint32_t)out->values.len);
  push_key(out, n, r->key.ptr, r->key.len, r->has_key);
  if (r->header_count || out->headers_on) {
    out->headers_on = true;
    fill_u32(out, &out->header_ends, n, (uint32_t)out->headers.len);
    for (size_t i = 0; i < r->header_count; i++) {
      const weir_transform_types_header_t *h = &r->headers[i];
      weir_transform_types_header_t *c = weir_grow(out, &out->headers, sizeof *c, 1);
      if (!c) break;
      full_transformer_string_dup_n(&c->name, (const char *)h->name.ptr, h->name.len);
      c->value.len = h->value.len;
      c->value.ptr = malloc(h->value.len + 1);
      if (c->value.ptr) memcpy(c->value.ptr, h->value.ptr, h->value.len);
    }
    PUSH(out, out->header_ends, uint32_t, (uint32_t)out->headers.len);
  }
  if (out->timestamps_on) PUSH(out, out->timestamps, int64_t, r->timestamp);
  out->in_order = out->in_order && r->index == n;
  PUSH(out, out->origins, uint32_t, r->index);
  uint32_t route = route_of(out, output);
  if (route || out->routes_on) {
    out->routes_on = true;
    fill_u32(out, &out->routes, n, 0);
    PUSH(out, out->routes, uint32_t, route);
  }
  out->count++;
  out->emitted++;
  return has_value ? v : NULL;
}

uint8_t *weir_emit_reserve(weir_output *out, size_t len) { return push(out, NULL, len, true); }

void weir_emit_to(weir_output *out, const char *output, const void *value, size_t len) {
  uint8_t *v = push(out, output, len, true);
  if (v && len) memcpy(v, value, len);
}

void weir_emit(weir_output *out, const void *value, size_t len) { weir_emit_to(out, NULL, value, len); }

void weir_emit_tombstone(weir_output *out) { push(out, NULL, 0, false); }

void weir_forward_to(weir_output *out, const char *output) {
  const weir_record *r = out->r;
  uint8_t *v = push(out, output, r->value.len, r->has_value);
  if (v && r->value.len) memcpy(v, r->value.ptr, r->value.len);
}

void weir_forward(weir_output *out) { weir_forward_to(out, NULL); }

void weir_set_key(weir_output *out, const void *key, size_t len) {
  if (!out->count) return;
  size_t n = out->count - 1;
  if (out->keys_on) {  // drop the inherited key of the last record
    uint32_t *ends = out->key_ends.ptr;
    out->keys.len = n ? ends[n - 1] : 0;
    out->key_ends.len = n;
    out->has_key.len = n;
  }
  push_key(out, n, key, key ? len : 0, key != NULL);
}

void weir_set_timestamp(weir_output *out, int64_t timestamp) {
  if (!out->count) return;
  if (!out->timestamps_on) {
    out->timestamps_on = true;
    uint32_t *origins = out->origins.ptr;
    for (size_t i = 0; i < out->count; i++) PUSH(out, out->timestamps, int64_t, out->input_ts[origins[i]]);
  }
  ((int64_t *)out->timestamps.ptr)[out->count - 1] = timestamp;
}


// Keyed state, timers and clocks: thin wrappers over the contract's imports.

uint8_t *weir_state_get(const void *key, size_t key_len, size_t *value_len) {
  full_transformer_list_u8_t k = {(uint8_t *)key, key_len}, v;
  if (!weir_transform_state_get(&k, &v)) return NULL;
  *value_len = v.len;
  return v.ptr;
}

char *weir_source(void) {
  full_transformer_string_t name;
  if (!weir_transform_context_source(&name)) return NULL;
  char *s = malloc(name.len + 1);
  if (s) {
    memcpy(s, name.ptr, name.len);
    s[name.len] = 0;
  }
  full_transformer_string_free(&name);
  return s;
}

void weir_state_put(const void *key, size_t key_len, const void *value, size_t value_len) {
  full_transformer_list_u8_t k = {(uint8_t *)key, key_len}, v = {(uint8_t *)value, value_len};
  weir_transform_state_put(&k, &v);
}

void weir_state_delete(const void *key, size_t key_len) {
  full_transformer_list_u8_t k = {(uint8_t *)key, key_len};
  weir_transform_state_delete(&k);
}

static weir_transform_timers_time_domain_t domain(bool event_time) {
  return event_time ? WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME : WEIR_TRANSFORM_TYPES_TIME_DOMAIN_PROCESSING_TIME;
}

void weir_timer_register(bool event_time, const void *key, size_t key_len, int64_t at) {
  full_transformer_list_u8_t k = {(uint8_t *)key, key_len};
  weir_transform_timers_register(domain(event_time), &k, at);
}

void weir_timer_delete(bool event_time, const void *key, size_t key_len, int64_t at) {
  full_transformer_list_u8_t k = {(uint8_t *)key, key_len};
  weir_transform_timers_delete(domain(event_time), &k, at);
}

bool weir_watermark(int64_t *ms) { return weir_transform_context_watermark(ms); }

int64_t weir_processing_time(void) { return weir_transform_context_processing_time(); }

weir_output_mode weir_query_output_mode(void) {
  switch (weir_transform_context_query_output_mode()) {
    case WEIR_TRANSFORM_CONTEXT_OUTPUT_MODE_UPDATE:
      return WEIR_UPDATE;
    case WEIR_TRANSFORM_CONTEXT_OUTPUT_MODE_COMPLETE:
      return WEIR_COMPLETE;
    default:
      return WEIR_APPEND;
  }
}

bool weir_event_time(void) { return weir_transform_context_event_time(); }
