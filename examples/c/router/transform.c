// Routes JSON records to the named output `eu` or `us` by their `region`
// field; other regions and records without one go to the default output; a
// value that does not look like a JSON object ({...}) is a bad record. The
// Rust `router` example with field = "region", route.eu = "eu",
// route.us = "us", strict = "true" does the same on the golden suite's
// records (flat objects). A scanner, not a JSON parser. Build: copy over
// src/transform.c of a `weir new --lang c` project, then `weir build`.

#include <string.h>

#include "weir.h"

static const char *by_region(const weir_record *r, weir_output *out) {
  weir_bytes v = r->value;
  if (v.len < 2 || v.ptr[0] != '{' || v.ptr[v.len - 1] != '}') {
    weir_bad(out, "not a JSON object");
    return NULL;
  }
  static const char key[] = "\"region\"";
  size_t k = sizeof(key) - 1;
  for (size_t i = 0; i + k < v.len; i++) {
    if (memcmp(v.ptr + i, key, k) != 0) continue;
    size_t j = i + k;
    while (j < v.len && (v.ptr[j] == ' ' || v.ptr[j] == ':')) j++;
    if (j + 4 <= v.len && memcmp(v.ptr + j, "\"eu\"", 4) == 0) return "eu";
    if (j + 4 <= v.len && memcmp(v.ptr + j, "\"us\"", 4) == 0) return "us";
    return NULL;
  }
  return NULL;
}

WEIR_ROUTE(by_region)
