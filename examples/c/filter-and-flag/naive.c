// The filter-and-flag as a newcomer first writes it in C: look for the
// text "amount": and read the number after it with strtod (no JSON
// checking beyond the braces).

#include <stdlib.h>
#include <string.h>

#include "weir.h"

static void filter_and_flag(const weir_record *r, weir_output *out) {
  const uint8_t *v = r->value.ptr;
  size_t n = r->value.len;
  if (n < 2 || v[0] != '{' || v[n - 1] != '}') {
    weir_bad(out, "not a JSON object");
    return;
  }
  static const char key[] = "\"amount\":";
  char buf[32];
  double amount = -1;
  for (size_t i = 0; i + sizeof(key) - 1 < n; i++) {
    if (memcmp(v + i, key, sizeof(key) - 1) != 0) continue;
    size_t j = i + sizeof(key) - 1, m = 0;
    while (j < n && m < sizeof(buf) - 1 && strchr("+-.eE0123456789", v[j])) buf[m++] = (char)v[j++];
    buf[m] = 0;
    amount = strtod(buf, NULL);
    break;
  }
  if (amount < 10) return;
  if (amount < 1000) {
    weir_emit(out, v, n);
    return;
  }
  static const char flag[] = ",\"big\":true}";
  uint8_t *o = weir_emit_reserve(out, n - 1 + sizeof(flag) - 1);
  if (!o) return;
  memcpy(o, v, n - 1);
  memcpy(o + n - 1, flag, sizeof(flag) - 1);
}

WEIR_FLAT_MAP(filter_and_flag)
