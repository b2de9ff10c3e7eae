// The config helpers, logs and metrics natively: weir_config_only and
// weir_config_duration_ms refuse what the other SDKs refuse, with a reason
// naming the key; counters and gauges reach the native stand-in.

#include <stdio.h>
#include <string.h>

#include "check.h"
#include "weir_testing.h"

static int64_t size_ms;

const char *weir_init(const weir_config *c) {
  static const char *const known[] = {"size", "label", NULL};
  const char *why = weir_config_only(c, known);
  return why ? why : weir_config_duration_ms(c, "size", 10000, &size_ms);
}

static void each(const weir_record *r, weir_output *out) {
  weir_counter_add("seen", 1);
  weir_gauge_set("last_len", (double)r->value.len);
  weir_log_info("seen one");
  char v[32];
  int n = snprintf(v, sizeof v, "%lld", (long long)size_ms);
  weir_emit(out, v, (size_t)n);
}

WEIR_FLAT_MAP(each)

static const char *broken_with(const char *const *config) {
  static char kept[256];
  weir_test_in in[] = {{.value = "a"}};
  weir_test_result r = weir_test_run(in, 1, config);
  snprintf(kept, sizeof kept, "%s", r.broken ? r.broken : "");
  weir_test_free(&r);
  return kept;
}

static void durations_and_known_keys(void) {
  const char *two_minutes[] = {"size", "2m", "label", "x", NULL};
  weir_test_in in[] = {{.value = "ab"}, {.value = "abc"}};
  weir_test_result r = weir_test_run(in, 2, two_minutes);
  CHECK(!r.broken && r.len == 2, "%s", r.broken ? r.broken : "");
  if (r.len == 2) CHECK(SAME(r.out[0].value, "120000"), "%s", (const char *)r.out[0].value.ptr);
  weir_test_free(&r);
  r = weir_test_run(in, 1, NULL);
  CHECK(r.len == 1 && SAME(r.out[0].value, "10000"), "the default");
  weir_test_free(&r);

  const char *typo[] = {"sise", "1s", NULL};
  const char *why = broken_with(typo);
  CHECK(strstr(why, "unknown config key `sise` (known: size, label)"), "%s", why);
  const char *not_a_duration[] = {"size", "ten", NULL};
  why = broken_with(not_a_duration);
  CHECK(strstr(why, "config key `size`: `ten` is not a duration"), "%s", why);
  const char *no_unit[] = {"size", "10", NULL};
  why = broken_with(no_unit);
  CHECK(strstr(why, "`10` is not a duration"), "%s", why);
}

static void metrics_reach_the_stand_in(void) {
  uint64_t before = weir_test_counter("seen");
  weir_test_in in[] = {{.value = "a"}, {.value = "abcd"}};
  weir_test_result r = weir_test_run(in, 2, NULL);
  weir_test_free(&r);
  CHECK(weir_test_counter("seen") == before + 2, "%llu", (unsigned long long)weir_test_counter("seen"));
  double g = 0;
  CHECK(weir_test_gauge("last_len", &g) && g == 4, "%f", g);
  CHECK(!weir_test_gauge("never_set", &g), "an unset gauge");
  CHECK(weir_test_counter("never_added") == 0, "an unset counter");
}

int main(void) {
  durations_and_known_keys();
  metrics_reach_the_stand_in();
  DONE("host");
}
