// Keeps JSON records whose `amount` is a number above 100; a value that
// does not look like a JSON object ({...}) is a bad record. The Rust
// `json-filter` example with field = "amount", op = "gt", value = "100"
// does the same on the golden suite's records (flat objects). A scanner,
// not a JSON parser: C has no SDK layer yet. Build: copy over
// src/transform.c of a `weir new --lang c` project, then `weir build`.

#include <stdlib.h>
#include <string.h>

#include "record_transformer.h"

bool exports_weir_transform_transform_init(record_transformer_list_tuple2_string_string_t *config,
                                           record_transformer_string_t *err) {
  bool ok = config->len == 0;
  if (!ok) record_transformer_string_dup(err, "this transform takes no config");
  record_transformer_list_tuple2_string_string_free(config);
  return ok;
}

// The number after the top-level key "amount", if any: *found says.
static double amount(const uint8_t *v, size_t n, bool *found) {
  static const char key[] = "\"amount\"";
  size_t k = sizeof(key) - 1;
  *found = false;
  for (size_t i = 0; i + k < n; i++) {
    if (memcmp(v + i, key, k) != 0) continue;
    size_t j = i + k;
    while (j < n && (v[j] == ' ' || v[j] == ':')) j++;
    if (j >= n || !(v[j] == '-' || (v[j] >= '0' && v[j] <= '9'))) return 0;
    char num[32];
    size_t m = 0;
    while (j < n && m < sizeof(num) - 1 && strchr("+-.eE0123456789", v[j])) num[m++] = (char)v[j++];
    num[m] = 0;
    *found = true;
    return strtod(num, NULL);
  }
  return 0;
}

bool exports_weir_transform_transform_process_batch(exports_weir_transform_transform_batch_t *in,
                                                    exports_weir_transform_transform_output_batch_t *out,
                                                    exports_weir_transform_transform_batch_error_t *err) {
  size_t n = in->value_ends.len;
  memset(out, 0, sizeof(*out));
  out->values.ptr = malloc(in->values.len + 1);
  out->value_ends.ptr = malloc(sizeof(uint32_t) * (n + 1));
  out->origins.ptr = malloc(sizeof(uint32_t) * (n + 1));
  out->rejected.ptr = malloc(sizeof(weir_transform_types_bad_record_t) * (n + 1));
  if (!out->values.ptr || !out->value_ends.ptr || !out->origins.ptr || !out->rejected.ptr) {
    err->tag = WEIR_TRANSFORM_TYPES_BATCH_ERROR_BROKEN;
    record_transformer_string_dup(&err->val.broken, "out of memory");
    return false;
  }
  uint32_t start = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t end = in->value_ends.ptr[i];
    const uint8_t *v = in->values.ptr + start;
    size_t len = end - start;
    start = end;
    if (len < 2 || v[0] != '{' || v[len - 1] != '}') {
      weir_transform_types_bad_record_t *bad = &out->rejected.ptr[out->rejected.len++];
      bad->index = (uint32_t)i;
      record_transformer_string_dup(&bad->reason, "not a JSON object");
      continue;
    }
    bool found;
    double a = amount(v, len, &found);
    if (!found || a <= 100) continue;
    memcpy(out->values.ptr + out->values.len, v, len);
    out->values.len += len;
    out->value_ends.ptr[out->value_ends.len++] = (uint32_t)out->values.len;
    out->origins.ptr[out->origins.len++] = (uint32_t)i;
  }
  exports_weir_transform_transform_batch_free(in);
  return true;
}

bool exports_weir_transform_record_transform_process_record(
    exports_weir_transform_record_transform_record_t *in,
    exports_weir_transform_record_transform_list_output_record_t *out,
    exports_weir_transform_record_transform_record_error_t *err) {
  (void)out;
  err->tag = WEIR_TRANSFORM_TYPES_RECORD_ERROR_BROKEN;
  record_transformer_string_dup(&err->val.broken, "this transform runs with call = \"batch\" only");
  exports_weir_transform_record_transform_record_free(in);
  return false;
}
