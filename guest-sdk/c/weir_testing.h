// Native unit tests for C transforms: weir_native.c stands in for weir's
// imports (keyed state in memory, timers, settable clocks and output mode,
// logs to stderr, metrics ignored), so a transform builds with the host's
// cc and runs through the same exports, loop and column rules as the
// component:
//
//   #include "weir_testing.h"
//   int main(void) {
//     weir_test_in in[] = {{.value = "a"}, {.value = "b", .timestamp = 5}};
//     weir_test_result res = weir_test_run(in, 2, NULL);
//     // res.out[0].value.ptr is "A" ...
//     weir_test_free(&res);
//   }
//
//   cc -Wno-attributes -I weir -o t test/transform_test.c src/*.c weir/*.c && ./t
//
// The stand-in sits in weir/ with the SDK; for wasm32 it compiles to
// nothing.

#ifndef WEIR_TESTING_H
#define WEIR_TESTING_H

#include "weir.h"

typedef struct {
  const char *name, *value;
} weir_test_header;

// One input record. Lengths 0 mean strlen (so text needs none).
typedef struct {
  const char *value;  // NULL: a record without a value (a tombstone)
  size_t value_len;
  const char *key;  // NULL: no key
  size_t key_len;
  int64_t timestamp;
  const weir_test_header *headers;
  size_t header_count;
} weir_test_in;

// One output record; its bytes are NUL-terminated copies, so text values
// compare with strcmp((const char *)o.value.ptr, "...").
typedef struct {
  weir_bytes value;
  bool has_value;
  weir_bytes key;
  bool has_key;
  weir_header *headers;
  size_t header_count;
  int64_t timestamp;
  const char *output;  // NULL: the default output
  uint32_t origin;     // the input record (or fired timer) it came from
} weir_test_out;

typedef struct {
  uint32_t index;
  const char *reason;
} weir_test_bad;

typedef struct {
  weir_test_out *out;
  size_t len;
  weir_test_bad *rejected;  // refused records, in index order
  size_t rejected_len;
  const char *broken;  // why the config was refused or the transform broke; else NULL
} weir_test_result;

// Init the registered transform with config (NULL-terminated name, value,
// name, value...; NULL: none), as weir does per instance, then run the
// records as one batch.
weir_test_result weir_test_run(const weir_test_in *records, size_t n, const char *const *config);
// The same for one record through the per-record export (call = "record").
weir_test_result weir_test_run_record(const weir_test_in *record, const char *const *config);
// Set the watermark, then fire every timer it (or, for processing-time
// timers, the processing time) reaches, in time order, as one call;
// outputs' origin indexes the fired timers.
weir_test_result weir_test_fire_timers(int64_t watermark);
void weir_test_free(weir_test_result *r);

// Forget state and timers; no watermark, processing time 0, output mode
// append, with event time.
void weir_test_reset(void);
void weir_test_set_watermark(int64_t ms);
void weir_test_set_processing_time(int64_t ms);
void weir_test_set_output_mode(weir_output_mode mode);
void weir_test_set_event_time(bool on);
// Run the next batches as the host runs a batch of source name (what
// weir_source says; NULL: none, as for timers), their records at offsets
// first_offset on.
void weir_test_set_source(const char *name, int64_t first_offset);
int64_t weir_test_first_offset(void);

// What the transform left behind: state entries in key order, timers in
// (time, key) order; false past the end.
bool weir_test_state_at(size_t i, weir_bytes *key, weir_bytes *value);
bool weir_test_timer_at(size_t i, weir_timer *t);

// Metrics the transform reported with weir_counter_add and weir_gauge_set:
// a counter's total (0 if never added to), and a gauge's last value (false
// if never set).
uint64_t weir_test_counter(const char *name);
bool weir_test_gauge(const char *name, double *value);

// Checks: a failed WEIR_CHECK prints its file, line and condition to stderr
// and is counted, and the test goes on; main ends with `return
// weir_test_report();` (prints "ok", or how many checks failed; 0 only
// when every check held).
#define WEIR_CHECK(cond)                                          \
  do {                                                            \
    if (!(cond)) weir_test_check_failed(__FILE__, __LINE__, #cond); \
  } while (0)
void weir_test_check_failed(const char *file, int line, const char *cond);
int weir_test_report(void);
// Whether b holds exactly the text s (an output's value, key ...).
bool weir_test_same(weir_bytes b, const char *s);

#endif
