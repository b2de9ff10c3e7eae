// weir's C SDK (see weir.h): the per-record loop, and the exports weir
// calls (init, process-batch, process-record).

#include <stdlib.h>
#include <string.h>

#include "weir_internal.h"

// Column lengths before a record, to drop its output if it is refused.
typedef struct {
  size_t count, values, keys, headers;
} mark;

static mark mark_of(const weir_output *out) {
  return (mark){out->count, out->values.len, out->keys.len, out->headers.len};
}

static void cut(vec *v, size_t n) {
  if (v->len > n) v->len = n;
}

static void rollback(weir_output *out, mark m) {
  weir_transform_types_header_t *hs = out->headers.ptr;
  for (size_t i = m.headers; i < out->headers.len; i++) weir_transform_types_header_free(&hs[i]);
  out->headers.len = m.headers;
  out->values.len = m.values;
  out->keys.len = m.keys;
  vec *per_record[] = {&out->value_ends, &out->has_value, &out->key_ends, &out->has_key, &out->header_ends,
                       &out->timestamps, &out->origins, &out->routes};
  for (size_t i = 0; i < sizeof per_record / sizeof *per_record; i++) cut(per_record[i], m.count);
  out->count = m.count;
  out->in_order = true;
  uint32_t *origins = out->origins.ptr;
  for (size_t i = 0; i < out->count; i++) out->in_order = out->in_order && origins[i] == i;
}

// Run the registered function for r.
static void run(weir_output *out, const weir_record *r) {
  out->r = r;
  out->emitted = 0;
  switch (weir_registered.kind) {
    case WEIR_KIND_MAP:
      if (!r->has_value) {
        weir_forward(out);
        return;
      }
      weir_registered.emit(r, out);
      if (!out->status && out->emitted != 1) weir_broken(out, "a WEIR_MAP function must emit exactly one value per record");
      return;
    case WEIR_KIND_FLAT_MAP:
      weir_registered.emit(r, out);
      return;
    case WEIR_KIND_FILTER:
      if (weir_registered.filter(r, out) && !out->status) weir_forward(out);
      return;
    case WEIR_KIND_ROUTE: {
      const char *to = weir_registered.route(r, out);
      if (!out->status) weir_forward_to(out, to);
      return;
    }
    case WEIR_KIND_WINDOWS:
      weir_registered.windows_impl->add(weir_registered.windows, r, out);
      return;
    case WEIR_KIND_JOIN:
      weir_registered.join_impl->add(weir_registered.join, r, out);
      return;
  }
}

static weir_bytes span(const uint8_t *data, const uint32_t *ends, size_t i) {
  uint32_t start = i ? ends[i - 1] : 0;
  return (weir_bytes){data + start, ends[i] - start};
}

weir_record weir_record_of(const weir_transform_types_batch_t *b, size_t i) {
  weir_record r = {.index = (uint32_t)i, .partition = b->partition};
  r.value = span(b->values.ptr, b->value_ends.ptr, i);
  r.has_value = b->has_value.len == 0 || b->has_value.ptr[i];
  r.has_key = b->key_ends.len > 0 && b->has_key.ptr[i];
  if (r.has_key) r.key = span(b->keys.ptr, b->key_ends.ptr, i);
  if (b->header_ends.len) {
    uint32_t start = i ? b->header_ends.ptr[i - 1] : 0;
    r.headers = b->headers.ptr + start;
    r.header_count = b->header_ends.ptr[i] - start;
  }
  r.timestamp = b->timestamps.ptr[i];
  r.offset = b->offsets.ptr[i];
  return r;
}

static void free_columns(weir_output *out) {
  weir_transform_types_header_t *hs = out->headers.ptr;
  for (size_t i = 0; i < out->headers.len; i++) weir_transform_types_header_free(&hs[i]);
  full_transformer_string_t *names = out->outputs.ptr;
  for (size_t i = 0; i < out->outputs.len; i++) full_transformer_string_free(&names[i]);
  weir_transform_types_bad_record_t *bad = out->rejected.ptr;
  for (size_t i = 0; i < out->rejected.len; i++) full_transformer_string_free(&bad[i].reason);
  vec *all[] = {&out->values, &out->value_ends, &out->has_value, &out->keys, &out->key_ends, &out->has_key,
                &out->headers, &out->header_ends, &out->timestamps, &out->origins, &out->routes,
                &out->outputs, &out->rejected};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->ptr);
  free(out->reason);
}

// After record (or timer) i ran: drop the output of a refused one and list
// it as rejected; false when the transform is broken.
static bool settle(weir_output *out, size_t i, mark m) {
  if (out->oom) weir_broken(out, "out of memory");
  if (out->status == BROKEN) return false;
  if (out->status == BAD) {
    rollback(out, m);
    weir_transform_types_bad_record_t bad = {.index = (uint32_t)i};
    full_transformer_string_dup(&bad.reason, out->reason);
    PUSH(out, out->rejected, weir_transform_types_bad_record_t, bad);
    free(out->reason);
    out->reason = NULL;
    out->status = OK;
  }
  return true;
}

// Run every record of b into out; false when the transform is broken.
static bool run_batch(weir_output *out, const weir_transform_types_batch_t *b) {
  *out = (weir_output){.input_ts = b->timestamps.ptr, .inputs = b->value_ends.len, .in_order = true};
  const struct weir_windows_impl *windows =
      weir_registered.kind == WEIR_KIND_WINDOWS ? weir_registered.windows_impl : NULL;
  if (windows && !windows->begin(weir_registered.windows, out)) return false;
  if (weir_registered.kind == WEIR_KIND_JOIN && !weir_registered.join_impl->begin(weir_registered.join, out)) {
    return false;
  }
  for (size_t i = 0; i < b->value_ends.len; i++) {
    weir_record r = weir_record_of(b, i);
    mark m = mark_of(out);
    run(out, &r);
    if (!settle(out, i, m)) return false;
  }
  if (windows) {
    windows->end(weir_registered.windows, out, b);
    if (out->oom) weir_broken(out, "out of memory");
  }
  return out->status != BROKEN;
}

// Move v's elements out (an empty list owns no memory: its free skips it).
static void *move(vec *v) {
  void *p = v->len ? v->ptr : NULL;
  if (!v->len) free(v->ptr);
  v->ptr = NULL;
  return p;
}

#define LIST(field, v, T) ((field).len = (v).len, (field).ptr = (T *)move(&(v)))

// Move out's columns into ret (weir frees them after the call).
static void to_output(weir_output *out, weir_transform_types_output_batch_t *ret) {
  memset(ret, 0, sizeof *ret);
  if (out->in_order && out->count == out->inputs) out->origins.len = 0;
  LIST(ret->values, out->values, uint8_t);
  LIST(ret->value_ends, out->value_ends, uint32_t);
  LIST(ret->has_value, out->has_value, bool);
  LIST(ret->keys, out->keys, uint8_t);
  LIST(ret->key_ends, out->key_ends, uint32_t);
  LIST(ret->has_key, out->has_key, bool);
  LIST(ret->headers, out->headers, weir_transform_types_header_t);
  LIST(ret->header_ends, out->header_ends, uint32_t);
  LIST(ret->timestamps, out->timestamps, int64_t);
  LIST(ret->origins, out->origins, uint32_t);
  LIST(ret->outputs, out->outputs, full_transformer_string_t);
  LIST(ret->routes, out->routes, uint32_t);
  LIST(ret->rejected, out->rejected, weir_transform_types_bad_record_t);
  out->headers.len = out->outputs.len = out->rejected.len = 0;  // moved
  free_columns(out);
}

// A batch call's answer: the output, or why the transform is broken.
static bool answer(weir_output *out, bool ok, weir_transform_types_output_batch_t *ret,
                   weir_transform_types_batch_error_t *err) {
  if (ok) {
    to_output(out, ret);
    return true;
  }
  err->tag = WEIR_TRANSFORM_TYPES_BATCH_ERROR_BROKEN;
  full_transformer_string_dup(&err->val.broken, out->reason);
  free_columns(out);
  return false;
}

bool exports_weir_transform_transform_process_batch(exports_weir_transform_transform_batch_t *in,
                                                    exports_weir_transform_transform_output_batch_t *ret,
                                                    exports_weir_transform_transform_batch_error_t *err) {
  weir_output out;
  bool ok = answer(&out, run_batch(&out, in), ret, err);
  exports_weir_transform_transform_batch_free(in);
  return ok;
}

bool exports_weir_transform_timer_handler_on_timers(exports_weir_transform_timer_handler_fired_timers_t *fired,
                                                    exports_weir_transform_timer_handler_output_batch_t *ret,
                                                    exports_weir_transform_timer_handler_batch_error_t *err) {
  size_t n = fired->times.len;
  weir_output out = {.input_ts = fired->times.ptr, .inputs = n, .in_order = true};
  uint32_t start = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t end = fired->key_ends.ptr[i];
    // The timer as a record without a value: outputs inherit its key and time.
    weir_record r = {.index = (uint32_t)i, .has_key = true, .timestamp = fired->times.ptr[i], .offset = -1};
    r.key = (weir_bytes){fired->keys.ptr + start, end - start};
    weir_timer t = {r.key, r.timestamp, fired->domains.ptr[i] == WEIR_TRANSFORM_TYPES_TIME_DOMAIN_EVENT_TIME};
    start = end;
    mark m = mark_of(&out);
    out.r = &r;
    out.emitted = 0;
    if (weir_registered.kind == WEIR_KIND_WINDOWS) {
      weir_registered.windows_impl->on_timer(weir_registered.windows, &t, &out);
    } else if (weir_registered.kind == WEIR_KIND_JOIN) {
      weir_registered.join_impl->on_timer(weir_registered.join, &t, &out);
    } else if (weir_on_timer) {
      weir_on_timer(&t, &out);
    } else {
      weir_broken(&out, "timers fired but the transform defines no weir_on_timer");
    }
    if (!settle(&out, i, m)) break;
  }
  bool ok = answer(&out, out.status != BROKEN, ret, err);
  exports_weir_transform_timer_handler_fired_timers_free(fired);
  return ok;
}

bool exports_weir_transform_record_transform_process_record(
    exports_weir_transform_record_transform_record_t *in,
    exports_weir_transform_record_transform_list_output_record_t *ret,
    exports_weir_transform_record_transform_record_error_t *err) {
  // A batch of one record, through the batch path: the same answer.
  uint32_t value_end = (uint32_t)(in->value.is_some ? in->value.val.len : 0);
  uint32_t key_end = (uint32_t)(in->key.is_some ? in->key.val.len : 0);
  uint32_t header_end = (uint32_t)in->headers.len;
  bool absent = false, has_key = true;
  weir_transform_types_batch_t b = {
      .partition = in->position.partition,
      .values = {in->value.val.ptr, value_end},
      .value_ends = {&value_end, 1},
      .has_value = {&absent, in->value.is_some ? 0 : 1},
      .keys = {in->key.val.ptr, key_end},
      .key_ends = {&key_end, in->key.is_some ? 1 : 0},
      .has_key = {&has_key, in->key.is_some ? 1 : 0},
      .headers = in->headers,
      .header_ends = {&header_end, in->headers.len ? 1 : 0},
      .timestamps = {&in->timestamp, 1},
      .offsets = {&in->position.offset, 1},
  };
  weir_output out;
  bool ok = run_batch(&out, &b);
  bool bad = ok && out.rejected.len > 0;
  if (!ok || bad) {
    err->tag = ok ? WEIR_TRANSFORM_TYPES_RECORD_ERROR_BAD_RECORD : WEIR_TRANSFORM_TYPES_RECORD_ERROR_BROKEN;
    const char *why = ok ? "" : out.reason;
    if (bad) {
      weir_transform_types_bad_record_t *r = out.rejected.ptr;
      full_transformer_string_dup_n(&err->val.bad_record, (const char *)r[0].reason.ptr, r[0].reason.len);
    } else {
      full_transformer_string_dup(&err->val.broken, why);
    }
    free_columns(&out);
    exports_weir_transform_record_transform_record_free(in);
    return false;
  }
  ret->len = out.count;
  ret->ptr = calloc(out.count + 1, sizeof *ret->ptr);
  uint32_t *ends = out.value_ends.ptr, *kends = out.key_ends.ptr, *hends = out.header_ends.ptr;
  weir_transform_types_header_t *hs = out.headers.ptr;
  for (size_t i = 0; ret->ptr && i < out.count; i++) {
    exports_weir_transform_record_transform_output_record_t *o = &ret->ptr[i];
    if (!out.has_value.len || ((bool *)out.has_value.ptr)[i]) {
      weir_bytes v = span(out.values.ptr, ends, i);
      o->value.is_some = true;
      o->value.val.len = v.len;
      o->value.val.ptr = malloc(v.len + 1);
      memcpy(o->value.val.ptr, v.ptr, v.len);
    }
    if (out.key_ends.len && ((bool *)out.has_key.ptr)[i]) {
      weir_bytes k = span(out.keys.ptr, kends, i);
      o->key.is_some = true;
      o->key.val.len = k.len;
      o->key.val.ptr = malloc(k.len + 1);
      memcpy(o->key.val.ptr, k.ptr, k.len);
    }
    if (out.header_ends.len) {  // moved out of the columns
      uint32_t start = i ? hends[i - 1] : 0;
      o->headers.len = hends[i] - start;
      o->headers.ptr = malloc(sizeof *hs * (o->headers.len + 1));
      memcpy(o->headers.ptr, hs + start, sizeof *hs * o->headers.len);
    }
    if (out.timestamps.len) {
      o->timestamp.is_some = true;
      o->timestamp.val = ((int64_t *)out.timestamps.ptr)[i];
    }
    uint32_t route = out.routes.len ? ((uint32_t *)out.routes.ptr)[i] : 0;
    if (route) {
      full_transformer_string_t *name = &((full_transformer_string_t *)out.outputs.ptr)[route - 1];
      o->output.is_some = true;
      full_transformer_string_dup_n(&o->output.val, (const char *)name->ptr, name->len);
    }
  }
  out.headers.len = 0;  // moved
  free_columns(&out);
  exports_weir_transform_record_transform_record_free(in);
  return ret->ptr != NULL;
}

bool exports_weir_transform_transform_init(full_transformer_list_tuple2_string_string_t *config,
                                           full_transformer_string_t *err) {
  weir_config c = {config->ptr, config->len};
  const char *why = NULL;
  if (weir_init) {
    why = weir_init(&c);
  } else if (config->len) {
    why = "this transform takes no config (define weir_init to accept some)";
  }
  if (!why && weir_registered.kind == WEIR_KIND_WINDOWS) {
    why = weir_registered.windows_impl->check(weir_registered.windows);
  }
  if (!why && weir_registered.kind == WEIR_KIND_JOIN) {
    why = weir_registered.join_impl->check(weir_registered.join);
  }
  if (why) full_transformer_string_dup(err, why);
  full_transformer_list_tuple2_string_string_free(config);
  return why == NULL;
}
