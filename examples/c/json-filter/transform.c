// Keeps JSON records whose `amount` is a number above 100; a value that
// does not look like a JSON object ({...}) is a bad record. The Rust
// `json-filter` example with field = "amount", op = "gt", value = "100"
// does the same on the golden suite's records (flat objects). A scanner,
// not a JSON parser. Build: copy over src/transform.c of a `weir new --lang
// c` project, then `weir build`.

#include <stdlib.h>
#include <string.h>

#include "weir.h"

// The number after the key "amount", if any: *found says.
static double amount(weir_bytes v, bool *found) {
  static const char key[] = "\"amount\"";
  size_t k = sizeof(key) - 1;
  *found = false;
  for (size_t i = 0; i + k < v.len; i++) {
    if (memcmp(v.ptr + i, key, k) != 0) continue;
    size_t j = i + k;
    while (j < v.len && (v.ptr[j] == ' ' || v.ptr[j] == ':')) j++;
    char num[32];
    size_t m = 0;
    while (j < v.len && m < sizeof(num) - 1 && strchr("+-.eE0123456789", v.ptr[j])) num[m++] = (char)v.ptr[j++];
    num[m] = 0;
    *found = m > 0;
    return strtod(num, NULL);
  }
  return 0;
}

static bool big(const weir_record *r, weir_output *out) {
  weir_bytes v = r->value;
  if (v.len < 2 || v.ptr[0] != '{' || v.ptr[v.len - 1] != '}') {
    weir_bad(out, "not a JSON object");
    return false;
  }
  bool found;
  double a = amount(v, &found);
  return found && a > 100;
}

WEIR_FILTER(big)
