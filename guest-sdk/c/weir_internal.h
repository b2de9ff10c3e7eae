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

// Record i of batch b.
weir_record weir_record_of(const weir_transform_types_batch_t *b, size_t i);

// The window code's hooks (weir_windows.c), called by weir_exports.c.
struct weir_windows_impl {
  // At init: why w is invalid, or NULL.
  const char *(*check)(const weir_windows *w);
  // Before a batch's records; false when the transform is broken.
  bool (*begin)(const weir_windows *w, weir_output *out);
  void (*add)(const weir_windows *w, const weir_record *r, weir_output *out);
  // After the batch's records: store the windows, emit what the mode asks.
  void (*end)(const weir_windows *w, weir_output *out, const weir_transform_types_batch_t *b);
  void (*on_timer)(const weir_windows *w, const weir_timer *t, weir_output *out);
};

// The join code's hooks (weir_joins.c), called by weir_exports.c.
struct weir_join_impl {
  const char *(*check)(const weir_join *j);
  // Before a batch's records (all of one source); false when broken.
  bool (*begin)(const weir_join *j, weir_output *out);
  void (*add)(const weir_join *j, const weir_record *r, weir_output *out);
  void (*on_timer)(const weir_join *j, const weir_timer *t, weir_output *out);
};

// Window state (weir_window_state.c), for weir_windows.c: a fixed window
// lives under 'W' + start + end + key (times big-endian with the sign bit
// flipped, so keys sort by time) as its raw accumulator; a key's sessions
// under 'S' + key as (start, end, accumulator) triples sorted by start.
enum { WEIR_FIXED = 'W', WEIR_SESSION = 'S' };

typedef struct {
  int64_t start, end;
  uint8_t *acc;
} weir_span;

// Accumulators are kept this far apart, so each is aligned for any type.
size_t weir_acc_stride(size_t size);
void weir_put_time(uint8_t *p, int64_t t);
int64_t weir_get_time(const uint8_t *p);
// The sessions in v (with room for one more), their accumulators in
// *pool; NULL (the transform broken) when corrupt or out of memory.
weir_span *weir_sessions_decode(const weir_windows *w, weir_output *out, const uint8_t *v, size_t len, size_t *n,
                                uint8_t **pool);
// Store n sessions under skey (none: delete it).
void weir_sessions_store(const weir_windows *w, weir_output *out, weir_bytes skey, const weir_span *s, size_t n);
// Emit the windows stored under skey (value v). With close_upto, sessions
// ending by then are closed: emitted in append mode, and dropped.
void weir_windows_emit_stored(const weir_windows *w, weir_output *out, weir_bytes skey, const uint8_t *v, size_t len,
                              const int64_t *close_upto, weir_output_mode mode);

#define PUSH(out, v, T, x)                          \
  do {                                              \
    T *slot_ = weir_grow(out, &(v), sizeof(T), 1); \
    if (slot_) *slot_ = (x);                        \
  } while (0)

#endif
