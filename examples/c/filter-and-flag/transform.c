// Drops orders under 10, flags those of 1000 and more with "big": true; a
// record that is not a JSON object with a number `amount` is refused. The
// way the README teaches: weir_json_get reads the one field (checking the
// whole record, no allocation); the output is the record's own bytes, or
// them with the flag written in before the closing brace. Build: copy over
// src/transform.c of a `weir new --lang c` project, then `weir build`.
// naive.c beside it scans for "amount": instead, as a newcomer might.

#include <string.h>

#include "weir.h"

static void filter_and_flag(const weir_record *r, weir_output *out) {
  weir_json_value field;
  double amount;
  if (weir_json_get(r->value, "amount", &field) != WEIR_JSON_FOUND || !weir_json_double(field, &amount)) {
    weir_bad(out, "not a JSON object with a number `amount`");
    return;
  }
  if (amount < 10) return;
  if (amount < 1000) {
    weir_emit(out, r->value.ptr, r->value.len);
    return;
  }
  size_t keep = r->value.len;
  while (keep > 0 && r->value.ptr[keep - 1] != '}') keep--;
  if (keep == 0) return;
  keep--;  // before the closing brace
  static const char flag[] = ",\"big\":true}";
  uint8_t *v = weir_emit_reserve(out, keep + sizeof(flag) - 1);
  if (!v) return;
  memcpy(v, r->value.ptr, keep);
  memcpy(v + keep, flag, sizeof(flag) - 1);
}

WEIR_FLAT_MAP(filter_and_flag)
