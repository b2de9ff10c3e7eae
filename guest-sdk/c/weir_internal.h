// Internal to weir's C SDK: the output builder shared by weir.c (the
// emit API) and weir_exports.c (the loop and the exports weir calls).

#ifndef WEIR_INTERNAL_H
#define WEIR_INTERNAL_H

#include "weir.h"

// A growable array of elements of one type.
typedef struct {
  void *ptr;
  size_t len, cap;
} vec;

struct weir_output {
  vec values, value_ends, has_value, keys, key_ends, has_key, headers, header_ends;
  vec timestamps, origins, routes, outputs, rejected;
  bool values_on, keys_on, headers_on, timestamps_on, routes_on;
  size_t count;  // output records
  const weir_record *r;
  const int64_t *input_ts;
  size_t inputs;
  bool in_order, oom;
  int status;  // 0 ok, 1 bad, 2 broken
  char *reason;
  size_t emitted;  // for the current record
};

enum { OK = 0, BAD = 1, BROKEN = 2 };

void *weir_grow(weir_output *out, vec *v, size_t elem, size_t n);

#define PUSH(out, v, T, x)                          \
  do {                                              \
    T *slot_ = weir_grow(out, &(v), sizeof(T), 1); \
    if (slot_) *slot_ = (x);                        \
  } while (0)

#endif
