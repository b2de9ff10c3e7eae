// Tiny assertions for the C SDK's native tests: CHECK counts failures and
// goes on; a test binary exits nonzero when any failed.

#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      failures++;                                                \
      fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                              \
      fputc('\n', stderr);                                       \
    }                                                            \
  } while (0)

// Whether b holds exactly the text s.
#define SAME(b, s) ((b).len == strlen(s) && memcmp((b).ptr, (s), (b).len) == 0)

#define DONE(name)                                                 \
  do {                                                             \
    if (failures)                                                  \
      fprintf(stderr, "%s: %d check(s) failed\n", name, failures); \
    else                                                           \
      printf("%s: ok\n", name);                                    \
    return failures != 0;                                          \
  } while (0)

#endif
