// weir's C SDK: a transform is one plain function per record, registered
// with one macro; the SDK runs the per-record loop over weir's columnar
// batches and builds the output columns, so no transform touches the
// encoding.
//
//   static void shout(const weir_record *r, weir_output *out) {
//     uint8_t *v = weir_emit_reserve(out, r->value.len);
//     for (size_t i = 0; i < r->value.len; i++) v[i] = toupper(r->value.ptr[i]);
//   }
//   WEIR_MAP(shout)
//
// A function refuses its record with weir_bad(out, reason) (the pipeline's
// on-error decides its fate) or stops the pipeline with weir_broken(out,
// reason); what it emitted for a refused record is dropped. Records and
// their bytes are valid only during the call.

#ifndef WEIR_H
#define WEIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "full_transformer.h"

typedef struct {
  const uint8_t *ptr;
  size_t len;
} weir_bytes;

typedef struct {
  weir_bytes name;
  weir_bytes value;
} weir_header;

typedef struct {
  uint32_t index;  // in its batch
  weir_bytes value;
  bool has_value;  // false for a record without a value (a tombstone)
  weir_bytes key;
  bool has_key;
  const weir_transform_types_header_t *headers;
  size_t header_count;
  int64_t timestamp;  // event time, ms since the Unix epoch
  uint32_t partition;
  int64_t offset;
} weir_record;

typedef struct weir_output weir_output;

// Emit a copy of value (len bytes) to the default output, keeping the input
// record's key, headers and timestamp.
void weir_emit(weir_output *out, const void *value, size_t len);
// Emit a value of len bytes written in place through the returned pointer
// (NULL when out of memory: the transform is then broken).
uint8_t *weir_emit_reserve(weir_output *out, size_t len);
// Emit to the named output (NULL: the default output).
void weir_emit_to(weir_output *out, const char *output, const void *value, size_t len);
// Emit a record without a value (it deletes its key from a compacted topic).
void weir_emit_tombstone(weir_output *out);
// Pass the input record through unchanged (to output, NULL: the default).
void weir_forward_to(weir_output *out, const char *output);
void weir_forward(weir_output *out);
// Set the last emitted record's key (NULL: no key) or timestamp.
void weir_set_key(weir_output *out, const void *key, size_t len);
void weir_set_timestamp(weir_output *out, int64_t timestamp);
// Refuse the record (reason copied), or stop the pipeline.
void weir_bad(weir_output *out, const char *reason);
void weir_broken(weir_output *out, const char *reason);

// The pipeline's [transform.config], for weir_init.
typedef struct {
  const full_transformer_tuple2_string_string_t *pairs;
  size_t len;
} weir_config;

// The value of key (NUL-terminated copy, freed with free), or NULL.
char *weir_config_get(const weir_config *c, const char *key);

// Refuse keys not in known (a NULL-terminated list), which catches typos:
// NULL when every key is known, else the reason, for weir_init to return.
const char *weir_config_only(const weir_config *c, const char *const *known);
// A duration such as 500ms, 10s, 2m or 1h, in ms, into *ms (fallback when
// key is absent): NULL, or why the value is not one (for weir_init).
const char *weir_config_duration_ms(const weir_config *c, const char *key, int64_t fallback, int64_t *ms);

// Define `const char *weir_init(const weir_config *config)` to check the
// config: return NULL to accept it, or why not (a string literal). Without
// one, any config is refused.
const char *weir_init(const weir_config *config) __attribute__((weak));

// weir's log (a line at the level, with the pipeline's name; natively,
// stderr) and metrics: counters and gauges that progress reports and
// `/metrics` show (natively, weir_test_counter and weir_test_gauge read
// them).
void weir_log_debug(const char *msg);
void weir_log_info(const char *msg);
void weir_log_warn(const char *msg);
void weir_log_error(const char *msg);
void weir_counter_add(const char *name, uint64_t delta);
void weir_gauge_set(const char *name, double value);

// Keyed state, timers and clocks, for stateful guests: calling any of these
// makes the component import weir's keyed state, so the pipeline needs a
// `[state]` key (the host routes each key's records to the same state).
// Checkpointed with every batch or epoch, restored exactly after a crash.

// The value stored under key, malloc'd (free it) with its length in
// *value_len; NULL when absent.
uint8_t *weir_state_get(const void *key, size_t key_len, size_t *value_len);
void weir_state_put(const void *key, size_t key_len, const void *value, size_t value_len);
void weir_state_delete(const void *key, size_t key_len);
// Call weir_on_timer with key once the watermark (event_time) or the
// processing time reaches at (ms); the same timer twice is kept once.
void weir_timer_register(bool event_time, const void *key, size_t key_len, int64_t at);
void weir_timer_delete(bool event_time, const void *key, size_t key_len, int64_t at);
// The batch's watermark in *ms; false before any event time.
bool weir_watermark(int64_t *ms);
int64_t weir_processing_time(void);

// How the pipeline emits stateful results (its output-mode): append emits
// each result once, when final (after the watermark passes it); update
// the results a batch changed; complete the whole result table with
// every batch.
typedef enum { WEIR_APPEND, WEIR_UPDATE, WEIR_COMPLETE } weir_output_mode;
weir_output_mode weir_query_output_mode(void);
// Whether the pipeline has an [event-time] section, i.e. whether
// event-time timers can ever fire.
bool weir_event_time(void);
// The name of the source whose records the current call holds (its
// [[source]] name, or source-<index>), malloc'd and NUL-terminated (free
// it); NULL while timers fire.
char *weir_source(void);

typedef struct {
  weir_bytes key;
  int64_t time;
  bool event_time;
} weir_timer;

// Define `void weir_on_timer(const weir_timer *timer, weir_output *out)` to
// handle fired timers (after the batch's records); it emits like a flat-map
// function, with the timer's key and time as defaults.
void weir_on_timer(const weir_timer *timer, weir_output *out) __attribute__((weak));

// Event-time windows (weir_windows.c), with the Rust SDK's semantics:
// tumbling, sliding and session windows over a per-record key, kept in
// keyed state and emitted by the pipeline's output-mode:
//   append:   each window once, when the watermark passes its end (needs
//             [event-time]), then its state is dropped;
//   update:   every window a batch changed, once, after the batch's
//             records; state is dropped when the watermark passes the
//             window;
//   complete: every window with every batch; state is never dropped.
// Outputs carry the window's key as key and its last millisecond (end - 1)
// as timestamp.
//
//   static weir_windows per_user = {.size_ms = 10000, .agg = &weir_count};
//   const char *weir_init(const weir_config *c) { ... per_user.size_ms = ...; return NULL; }
//   WEIR_WINDOWS(per_user)

// An aggregate folds a window's records into an accumulator of size bytes,
// stored in state as raw bytes (so keep pointers out of it, and change its
// layout only with a fresh checkpoint). The SDK passes accumulators
// aligned for any type.
typedef struct {
  size_t size;
  void (*zero)(void *acc);
  // Fold r in; weir_bad(out, reason) refuses the record, and then none of
  // its windows changes. It must not emit.
  void (*add)(void *acc, const weir_record *r, weir_output *out);
  // Fold other (the sessions a record bridges, in start order, then the
  // record) into into; only session windows call it (NULL is fine else).
  void (*merge)(void *into, const void *other);
  // Emit the window's value (at most one: none skips the window); the SDK
  // sets its key and timestamp. weir_bad here stops the pipeline, as there
  // is no record to refuse.
  void (*result)(weir_bytes key, int64_t start, int64_t end, const void *acc, weir_output *out);
} weir_aggregate;

// Counts records; emits {"key":..,"start":..,"end":..,"count":..}, as the
// Rust, Go and Python SDKs' Count does.
extern const weir_aggregate weir_count;

// Reading a JSON object record. weir_json_get finds the top-level field
// `name` of doc in one pass without allocating, checking the syntax of all
// of doc: WEIR_JSON_INVALID for anything but one well-formed JSON object
// (nesting deeper than 64 included), WEIR_JSON_MISSING when the field is
// absent, else WEIR_JSON_FOUND with v holding its kind and raw bytes (a
// string's quotes and escapes included). Of repeated names, the first.
typedef enum {
  WEIR_JSON_NULL,
  WEIR_JSON_BOOL,
  WEIR_JSON_NUMBER,
  WEIR_JSON_STRING,
  WEIR_JSON_ARRAY,
  WEIR_JSON_OBJECT,
} weir_json_kind;

typedef struct {
  weir_json_kind kind;
  weir_bytes raw;
} weir_json_value;

typedef enum { WEIR_JSON_FOUND, WEIR_JSON_MISSING, WEIR_JSON_INVALID } weir_json_result;

weir_json_result weir_json_get(weir_bytes doc, const char *name, weir_json_value *v);
// A number field's value; false for another kind (or, for int64, a
// fraction, an exponent or a value out of range).
bool weir_json_double(weir_json_value v, double *out);
bool weir_json_int64(weir_json_value v, int64_t *out);
bool weir_json_bool(weir_json_value v, bool *out);
// A string field's text, escapes decoded (UTF-8), into dst; returns its
// length, which may exceed cap (then only cap bytes were written).
size_t weir_json_unescape(weir_bytes raw, uint8_t *dst, size_t cap);

// Writes s (lossy UTF-8) as a JSON string literal to dst, escaped as the
// Rust SDK escapes it (quotes, backslashes, control characters), and
// returns its length; dst NULL only measures it.
size_t weir_json_string(uint8_t *dst, weir_bytes s);

// The record's window key in *key (its bytes valid until the next call,
// e.g. a part of r's value or a static buffer); false (with or without
// weir_bad) refuses the record.
typedef bool (*weir_key_by)(const weir_record *r, weir_bytes *key, weir_output *out);

// A windowed aggregation. Session windows when gap_ms is set (then size_ms
// and slide_ms are 0), else windows size_ms long starting every slide_ms
// (0: size_ms, tumbling); a record is in each window that covers its
// timestamp. Times are ms, and must be positive: init fails otherwise.
typedef struct {
  int64_t size_ms, slide_ms, gap_ms;
  const weir_aggregate *agg;
  weir_key_by key_by;  // NULL: the record's key (records without one are refused)
} weir_windows;

// For weir_init, e.g. `per_user = weir_sliding(size, slide, &weir_count, NULL)`.
weir_windows weir_tumbling(int64_t size_ms, const weir_aggregate *agg, weir_key_by key_by);
weir_windows weir_sliding(int64_t size_ms, int64_t slide_ms, const weir_aggregate *agg, weir_key_by key_by);
weir_windows weir_session(int64_t gap_ms, const weir_aggregate *agg, weir_key_by key_by);

// The SDK's window code, linked in only by WEIR_WINDOWS (so other guests
// stay stateless).
struct weir_windows_impl;
extern const struct weir_windows_impl weir_windows_impl;

// Stream-stream joins (weir_joins.c), with the Rust SDK's semantics: two
// sources joined on a key within an event-time range, Spark's `left.key =
// right.key AND right.ts BETWEEN left.ts - before AND left.ts + after`.
// Each row waits in keyed state until the watermark proves no row of the
// other side can still match it, then leaves it; an outer join emits its
// unmatched rows then. A pair is emitted once, when its second row
// arrives. Outputs carry the join key and the later of the two rows'
// event times (an unmatched row's own). Needs [event-time] and
// output-mode = "append". Rows are stored in the Rust SDK's layout.
//
//   static weir_join orders_payments = {.kind = WEIR_INNER, .left = "orders", .right = "payments",
//                                       .after_ms = 60000, .left_key = order_id, .right_key = order_id};
//   WEIR_JOIN(orders_payments)
typedef enum { WEIR_INNER, WEIR_LEFT_OUTER, WEIR_RIGHT_OUTER, WEIR_FULL_OUTER } weir_join_kind;

typedef struct {
  weir_bytes value;
  int64_t timestamp;  // its event time
} weir_join_row;

// A matched pair, or an outer join's unmatched row (the other side NULL).
typedef struct {
  weir_bytes key;
  const weir_join_row *left, *right;
} weir_joined;

typedef struct {
  weir_join_kind kind;
  const char *left, *right;     // the sources' [[source]] names
  int64_t before_ms, after_ms;  // a right row at u matches a left row at t when t - before <= u <= t + after
  weir_key_by left_key, right_key;  // NULL: the record's key
  // Emit the output value (one weir_emit); the SDK sets its key and
  // timestamp. NULL: {"left":<value>,"right":<value>}, null for a missing side.
  void (*output)(const weir_joined *j, weir_output *out);
} weir_join;

struct weir_join_impl;
extern const struct weir_join_impl weir_join_impl;

typedef enum { WEIR_KIND_MAP, WEIR_KIND_FLAT_MAP, WEIR_KIND_FILTER, WEIR_KIND_ROUTE, WEIR_KIND_WINDOWS, WEIR_KIND_JOIN } weir_kind;

typedef struct {
  weir_kind kind;
  void (*emit)(const weir_record *, weir_output *);
  bool (*filter)(const weir_record *, weir_output *);
  const char *(*route)(const weir_record *, weir_output *);
  weir_windows *windows;
  const struct weir_windows_impl *windows_impl;
  weir_join *join;
  const struct weir_join_impl *join_impl;
} weir_transform;

// The one registration, made by one of the macros below.
extern const weir_transform weir_registered;

// void fn(const weir_record *, weir_output *): emits exactly one value per
// record; records without a value pass through without calling fn.
#define WEIR_MAP(fn) const weir_transform weir_registered = {.kind = WEIR_KIND_MAP, .emit = fn};
// void fn(const weir_record *, weir_output *): emits any number of records.
#define WEIR_FLAT_MAP(fn) const weir_transform weir_registered = {.kind = WEIR_KIND_FLAT_MAP, .emit = fn};
// bool fn(const weir_record *, weir_output *): true keeps the record.
#define WEIR_FILTER(fn) const weir_transform weir_registered = {.kind = WEIR_KIND_FILTER, .filter = fn};
// const char *fn(const weir_record *, weir_output *): the named output the
// record goes to, unchanged, or NULL for the default output.
#define WEIR_ROUTE(fn) const weir_transform weir_registered = {.kind = WEIR_KIND_ROUTE, .route = fn};
// weir_windows w (a variable, so weir_init may set it from the config):
// records fold into w's windows, emitted as the output mode says; fired
// timers close windows (weir_on_timer is not called).
#define WEIR_WINDOWS(w)                    \
  const weir_transform weir_registered = { \
      .kind = WEIR_KIND_WINDOWS, .windows = &(w), .windows_impl = &weir_windows_impl};
// weir_join j (a variable, so weir_init may set it from the config): the
// transform is that join; fired timers end rows (weir_on_timer is not called).
#define WEIR_JOIN(j) \
  const weir_transform weir_registered = {.kind = WEIR_KIND_JOIN, .join = &(j), .join_impl = &weir_join_impl};

#endif
