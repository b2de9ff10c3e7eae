// weir's C SDK natively (see weir_testing.h): runs records and timers
// through the exports as weir calls them, over weir_native.c's imports,
// and reads their output columns back as records. Empty for wasm32.

#ifndef __wasm__

#include "weir_testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void weir_native_take_due(exports_weir_transform_timer_handler_fired_timers_t *fired);
void weir_native_expire_due(void);

static void *alloc(size_t n) {
  void *p = calloc(1, n + 1);
  if (!p) abort();
  return p;
}

static weir_bytes copy(const void *p, size_t n) {
  uint8_t *c = alloc(n);
  if (n) memcpy(c, p, n);
  return (weir_bytes){c, n};
}

static weir_bytes copy_str(const full_transformer_string_t *s) { return copy(s->ptr, s->len); }

static size_t len_of(const char *s, size_t n) { return n || !s ? n : strlen(s); }

// The config as the export takes it (which frees it); false (and why in
// res) when init refuses it.
static bool init(const char *const *config, weir_test_result *res) {
  size_t n = 0;
  while (config && config[2 * n]) n++;
  full_transformer_list_tuple2_string_string_t list = {n ? alloc(n * sizeof *list.ptr) : NULL, n};
  for (size_t i = 0; i < n; i++) {
    full_transformer_string_dup(&list.ptr[i].f0, config[2 * i]);
    full_transformer_string_dup(&list.ptr[i].f1, config[2 * i + 1] ? config[2 * i + 1] : "");
  }
  full_transformer_string_t err = {0};
  if (exports_weir_transform_transform_init(&list, &err)) return true;
  res->broken = (const char *)copy_str(&err).ptr;
  full_transformer_string_free(&err);
  return false;
}

static void headers_of(const weir_test_in *r, weir_transform_types_header_t *h) {
  for (size_t j = 0; j < r->header_count; j++) {
    full_transformer_string_dup(&h[j].name, r->headers[j].name);
    weir_bytes v = copy(r->headers[j].value, strlen(r->headers[j].value));
    h[j].value = (full_transformer_list_u8_t){(uint8_t *)v.ptr, v.len};
  }
}

// The columnar batch of in (its lists malloc'd: the export frees them).
static weir_transform_types_batch_t batch_of(const weir_test_in *in, size_t n) {
  weir_transform_types_batch_t b = {0};
  size_t values = 0, keys = 0, headers = 0;
  bool tombstones = false, any_key = false;
  for (size_t i = 0; i < n; i++) {
    values += len_of(in[i].value, in[i].value_len);
    keys += len_of(in[i].key, in[i].key_len);
    headers += in[i].header_count;
    tombstones |= !in[i].value;
    any_key |= in[i].key != NULL;
  }
  b.values = (full_transformer_list_u8_t){alloc(values), 0};
  b.keys = (full_transformer_list_u8_t){alloc(keys), 0};
  b.headers = (weir_transform_types_list_header_t){alloc(headers * sizeof *b.headers.ptr), headers};
  b.value_ends = (full_transformer_list_u32_t){alloc(n * 4), n};
  b.key_ends = (full_transformer_list_u32_t){alloc(n * 4), any_key ? n : 0};
  b.header_ends = (full_transformer_list_u32_t){alloc(n * 4), headers ? n : 0};
  b.has_value = (full_transformer_list_bool_t){alloc(n), tombstones ? n : 0};
  b.has_key = (full_transformer_list_bool_t){alloc(n), any_key ? n : 0};
  b.timestamps = (full_transformer_list_s64_t){alloc(n * 8), n};
  b.offsets = (full_transformer_list_s64_t){alloc(n * 8), n};
  for (size_t i = 0, h = 0; i < n; i++) {
    size_t vn = len_of(in[i].value, in[i].value_len), kn = len_of(in[i].key, in[i].key_len);
    if (vn) memcpy(b.values.ptr + b.values.len, in[i].value, vn);
    if (kn) memcpy(b.keys.ptr + b.keys.len, in[i].key, kn);
    b.value_ends.ptr[i] = (uint32_t)(b.values.len += vn);
    b.key_ends.ptr[i] = (uint32_t)(b.keys.len += kn);
    headers_of(&in[i], b.headers.ptr + h);
    b.header_ends.ptr[i] = (uint32_t)(h += in[i].header_count);
    b.has_value.ptr[i] = in[i].value != NULL;
    b.has_key.ptr[i] = in[i].key != NULL;
    b.timestamps.ptr[i] = in[i].timestamp;
    b.offsets.ptr[i] = weir_test_first_offset() + (int64_t)i;
  }
  return b;
}

// Free the lists of b that the export's free skips (empty ones).
static void free_empty(weir_transform_types_batch_t *b) {
  void *lists[] = {b->values.len ? NULL : b->values.ptr,           b->keys.len ? NULL : b->keys.ptr,
                   b->headers.len ? NULL : b->headers.ptr,         b->key_ends.len ? NULL : b->key_ends.ptr,
                   b->header_ends.len ? NULL : b->header_ends.ptr, b->has_value.len ? NULL : b->has_value.ptr,
                   b->has_key.len ? NULL : b->has_key.ptr};
  for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) free(lists[i]);
}

static weir_bytes span(const uint8_t *data, const uint32_t *ends, size_t i) {
  uint32_t start = i ? ends[i - 1] : 0;
  return copy(data + start, ends[i] - start);
}

static weir_header *headers_copy(const weir_transform_types_header_t *h, size_t n) {
  weir_header *c = alloc(n * sizeof *c);
  for (size_t i = 0; i < n; i++) c[i] = (weir_header){copy_str(&h[i].name), copy(h[i].value.ptr, h[i].value.len)};
  return c;
}

// An output batch's records (inputs' timestamps in ts) and rejections.
static void read_output(weir_test_result *res, const weir_transform_types_output_batch_t *o, const int64_t *ts) {
  res->len = o->value_ends.len;
  res->out = alloc(res->len * sizeof *res->out);
  for (size_t i = 0; i < res->len; i++) {
    weir_test_out *r = &res->out[i];
    r->origin = o->origins.len ? o->origins.ptr[i] : (uint32_t)i;
    r->value = span(o->values.ptr, o->value_ends.ptr, i);
    r->has_value = !o->has_value.len || o->has_value.ptr[i];
    r->has_key = o->key_ends.len && o->has_key.ptr[i];
    r->key = r->has_key ? span(o->keys.ptr, o->key_ends.ptr, i) : copy(NULL, 0);
    if (o->header_ends.len) {
      uint32_t start = i ? o->header_ends.ptr[i - 1] : 0;
      r->header_count = o->header_ends.ptr[i] - start;
      r->headers = headers_copy(o->headers.ptr + start, r->header_count);
    }
    r->timestamp = o->timestamps.len ? o->timestamps.ptr[i] : ts[r->origin];
    uint32_t route = o->routes.len ? o->routes.ptr[i] : 0;
    if (route) r->output = (const char *)copy_str(&o->outputs.ptr[route - 1]).ptr;
  }
  res->rejected_len = o->rejected.len;
  res->rejected = alloc(res->rejected_len * sizeof *res->rejected);
  for (size_t i = 0; i < o->rejected.len; i++) {
    res->rejected[i].index = o->rejected.ptr[i].index;
    res->rejected[i].reason = (const char *)copy_str(&o->rejected.ptr[i].reason).ptr;
  }
}

// A batch call's answer (ok: ret; else err) into res.
static void answer(weir_test_result *res, bool ok, weir_transform_types_output_batch_t *ret,
                   weir_transform_types_batch_error_t *err, const int64_t *ts) {
  if (ok) {
    read_output(res, ret, ts);
    weir_transform_types_output_batch_free(ret);
    return;
  }
  bool bad = err->tag == WEIR_TRANSFORM_TYPES_BATCH_ERROR_BAD_RECORD;
  res->broken = (const char *)copy_str(bad ? &err->val.bad_record.reason : &err->val.broken).ptr;
  weir_transform_types_batch_error_free(err);
}

weir_test_result weir_test_run(const weir_test_in *records, size_t n, const char *const *config) {
  weir_test_result res = {0};
  if (!init(config, &res)) return res;
  weir_transform_types_batch_t b = batch_of(records, n);
  int64_t *ts = alloc(n * sizeof *ts);
  for (size_t i = 0; i < n; i++) ts[i] = records[i].timestamp;
  weir_transform_types_batch_t lists = b;
  weir_transform_types_output_batch_t ret = {0};
  weir_transform_types_batch_error_t err = {0};
  answer(&res, exports_weir_transform_transform_process_batch(&b, &ret, &err), &ret, &err, ts);
  free_empty(&lists);
  free(ts);
  return res;
}

weir_test_result weir_test_run_record(const weir_test_in *in, const char *const *config) {
  weir_test_result res = {0};
  if (!init(config, &res)) return res;
  weir_transform_types_record_t r = {.timestamp = in->timestamp};
  size_t vn = len_of(in->value, in->value_len), kn = len_of(in->key, in->key_len);
  weir_bytes v = copy(in->value, vn), k = copy(in->key, kn);
  r.value = (full_transformer_option_list_u8_t){in->value != NULL, {(uint8_t *)v.ptr, v.len}};
  r.key = (full_transformer_option_list_u8_t){in->key != NULL, {(uint8_t *)k.ptr, k.len}};
  r.headers = (weir_transform_types_list_header_t){alloc(in->header_count * sizeof *r.headers.ptr), in->header_count};
  headers_of(in, r.headers.ptr);
  exports_weir_transform_record_transform_list_output_record_t list = {0};
  weir_transform_types_record_error_t err = {0};
  weir_transform_types_record_t lists = r;
  bool ok = exports_weir_transform_record_transform_process_record(&r, &list, &err);
  if (!lists.value.val.len) free(lists.value.val.ptr);  // the export's free skips empty lists
  if (!lists.key.val.len) free(lists.key.val.ptr);
  if (!lists.headers.len) free(lists.headers.ptr);
  if (!ok) {
    full_transformer_string_t *why =
        err.tag == WEIR_TRANSFORM_TYPES_RECORD_ERROR_BROKEN ? &err.val.broken : &err.val.bad_record;
    if (err.tag == WEIR_TRANSFORM_TYPES_RECORD_ERROR_BROKEN) {
      res.broken = (const char *)copy_str(why).ptr;
    } else {
      res.rejected = alloc(sizeof *res.rejected);
      res.rejected[0].reason = (const char *)copy_str(why).ptr;
      res.rejected_len = 1;
    }
    weir_transform_types_record_error_free(&err);
    return res;
  }
  res.len = list.len;
  res.out = alloc(list.len * sizeof *res.out);
  for (size_t i = 0; i < list.len; i++) {
    const weir_transform_types_output_record_t *o = &list.ptr[i];
    weir_test_out *out = &res.out[i];
    out->has_value = o->value.is_some;
    out->value = copy(o->value.val.ptr, o->value.is_some ? o->value.val.len : 0);
    out->has_key = o->key.is_some;
    out->key = copy(o->key.val.ptr, o->key.is_some ? o->key.val.len : 0);
    out->header_count = o->headers.len;
    out->headers = headers_copy(o->headers.ptr, o->headers.len);
    out->timestamp = o->timestamp.is_some ? o->timestamp.val : in->timestamp;
    if (o->output.is_some) out->output = (const char *)copy_str(&o->output.val).ptr;
  }
  exports_weir_transform_record_transform_list_output_record_free(&list);
  return res;
}

weir_test_result weir_test_fire_timers(int64_t watermark) {
  weir_test_result res = {0};
  weir_test_set_watermark(watermark);
  exports_weir_transform_timer_handler_fired_timers_t fired = {0};
  weir_native_take_due(&fired);
  uint8_t *keys = fired.keys.ptr;
  if (!fired.times.len) {  // weir calls on-timers only for fired timers
    free(keys), free(fired.key_ends.ptr), free(fired.times.ptr), free(fired.domains.ptr);
    weir_native_expire_due();
    return res;
  }
  int64_t *ts = alloc(fired.times.len * sizeof *ts);
  memcpy(ts, fired.times.ptr, fired.times.len * sizeof *ts);
  bool empty_keys = !fired.keys.len;  // the export's free skips empty lists
  weir_transform_types_output_batch_t ret = {0};
  weir_transform_types_batch_error_t err = {0};
  answer(&res, exports_weir_transform_timer_handler_on_timers(&fired, &ret, &err), &ret, &err, ts);
  if (empty_keys) free(keys);
  free(ts);
  weir_native_expire_due();
  return res;
}

void weir_test_free(weir_test_result *r) {
  for (size_t i = 0; i < r->len; i++) {
    weir_test_out *o = &r->out[i];
    free((void *)o->value.ptr), free((void *)o->key.ptr), free((void *)o->output);
    for (size_t j = 0; j < o->header_count; j++)
      free((void *)o->headers[j].name.ptr), free((void *)o->headers[j].value.ptr);
    free(o->headers);
  }
  for (size_t i = 0; i < r->rejected_len; i++) free((void *)r->rejected[i].reason);
  free(r->out), free(r->rejected), free((void *)r->broken);
  *r = (weir_test_result){0};
}

static int check_failures;

void weir_test_check_failed(const char *file, int line, const char *cond) {
  check_failures++;
  fprintf(stderr, "%s:%d: failed: %s\n", file, line, cond);
}

int weir_test_report(void) {
  if (check_failures) {
    fprintf(stderr, "%d check(s) failed\n", check_failures);
    return 1;
  }
  printf("ok\n");
  return 0;
}

bool weir_test_same(weir_bytes b, const char *s) { return b.len == strlen(s) && memcmp(b.ptr, s, b.len) == 0; }

#endif
