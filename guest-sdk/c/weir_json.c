// Reading fields of a JSON object record without a parser library or an
// allocation: one pass over the value that checks the syntax it skips
// (strings with their escapes, numbers, literals, nested arrays and
// objects), so a malformed record is refused rather than misread.

#include <stdlib.h>
#include <string.h>

#include "weir.h"

typedef struct {
  const uint8_t *p, *end;
} scan;

static void skip_ws(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static bool hex4(const uint8_t *p) {
  for (int i = 0; i < 4; i++) {
    uint8_t c = p[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

// A string at s->p (its opening quote); *escaped says whether it holds
// escapes (its raw bytes then differ from its text).
static bool skip_string(scan *s, bool *escaped) {
  *escaped = false;
  s->p++;
  while (s->p < s->end) {
    uint8_t c = *s->p++;
    if (c == '"') return true;
    if (c < 0x20) return false;
    if (c == '\\') {
      if (s->p >= s->end) return false;
      uint8_t e = *s->p++;
      *escaped = true;
      if (e == 'u') {
        if (s->end - s->p < 4 || !hex4(s->p)) return false;
        s->p += 4;
      } else if (!strchr("\"\\/bfnrt", e) || e == 0) {
        return false;
      }
    }
  }
  return false;
}

static bool skip_number(scan *s) {
  const uint8_t *start = s->p;
  if (s->p < s->end && *s->p == '-') s->p++;
  if (s->p >= s->end) return false;
  if (*s->p == '0') {
    s->p++;
  } else if (*s->p >= '1' && *s->p <= '9') {
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
  } else {
    return false;
  }
  if (s->p < s->end && *s->p == '.') {
    s->p++;
    const uint8_t *digits = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    if (s->p == digits) return false;
  }
  if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
    s->p++;
    if (s->p < s->end && (*s->p == '+' || *s->p == '-')) s->p++;
    const uint8_t *digits = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') s->p++;
    if (s->p == digits) return false;
  }
  return s->p > start;
}

static bool literal(scan *s, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0) return false;
  s->p += n;
  return true;
}

// Nesting deeper than this is refused: the scanner recurses per level.
#define MAX_DEPTH 64

static bool skip_value(scan *s, weir_json_kind *kind, int depth);

static bool skip_container(scan *s, bool object, int depth) {
  if (depth > MAX_DEPTH) return false;
  uint8_t close = object ? '}' : ']';
  s->p++;
  skip_ws(s);
  if (s->p < s->end && *s->p == close) {
    s->p++;
    return true;
  }
  for (;;) {
    weir_json_kind k;
    skip_ws(s);
    if (object) {
      bool escaped;
      if (s->p >= s->end || *s->p != '"' || !skip_string(s, &escaped)) return false;
      skip_ws(s);
      if (s->p >= s->end || *s->p != ':') return false;
      s->p++;
      skip_ws(s);
    }
    if (!skip_value(s, &k, depth + 1)) return false;
    skip_ws(s);
    if (s->p >= s->end) return false;
    if (*s->p == ',') {
      s->p++;
      continue;
    }
    if (*s->p != close) return false;
    s->p++;
    return true;
  }
}

static bool skip_value(scan *s, weir_json_kind *kind, int depth) {
  if (s->p >= s->end) return false;
  bool escaped;
  switch (*s->p) {
    case '"':
      *kind = WEIR_JSON_STRING;
      return skip_string(s, &escaped);
    case '{':
      *kind = WEIR_JSON_OBJECT;
      return skip_container(s, true, depth);
    case '[':
      *kind = WEIR_JSON_ARRAY;
      return skip_container(s, false, depth);
    case 't':
      *kind = WEIR_JSON_BOOL;
      return literal(s, "true");
    case 'f':
      *kind = WEIR_JSON_BOOL;
      return literal(s, "false");
    case 'n':
      *kind = WEIR_JSON_NULL;
      return literal(s, "null");
    default:
      *kind = WEIR_JSON_NUMBER;
      return skip_number(s);
  }
}

// Whether the raw string token `raw` (quotes included) spells `name`.
static bool key_is(weir_bytes raw, bool escaped, const char *name, size_t name_len) {
  if (!escaped) return raw.len == name_len + 2 && memcmp(raw.ptr + 1, name, name_len) == 0;
  uint8_t buf[256];
  if (name_len > sizeof buf) return false;
  size_t n = weir_json_unescape(raw, buf, sizeof buf);
  return n == name_len && memcmp(buf, name, n) == 0;
}

weir_json_result weir_json_get(weir_bytes doc, const char *name, weir_json_value *v) {
  scan s = {doc.ptr, doc.ptr + doc.len};
  size_t name_len = strlen(name);
  bool found = false;
  skip_ws(&s);
  if (s.p >= s.end || *s.p != '{') return WEIR_JSON_INVALID;
  s.p++;
  skip_ws(&s);
  if (s.p < s.end && *s.p == '}') {
    s.p++;
  } else {
    for (;;) {
      bool escaped;
      skip_ws(&s);
      const uint8_t *key = s.p;
      if (s.p >= s.end || *s.p != '"' || !skip_string(&s, &escaped)) return WEIR_JSON_INVALID;
      weir_bytes raw = {key, (size_t)(s.p - key)};
      skip_ws(&s);
      if (s.p >= s.end || *s.p != ':') return WEIR_JSON_INVALID;
      s.p++;
      skip_ws(&s);
      const uint8_t *start = s.p;
      weir_json_kind kind;
      if (!skip_value(&s, &kind, 1)) return WEIR_JSON_INVALID;
      // The first of repeated names, as the other SDKs' readers give it.
      if (!found && key_is(raw, escaped, name, name_len)) {
        v->kind = kind;
        v->raw = (weir_bytes){start, (size_t)(s.p - start)};
        found = true;
      }
      skip_ws(&s);
      if (s.p >= s.end) return WEIR_JSON_INVALID;
      if (*s.p == ',') {
        s.p++;
        continue;
      }
      if (*s.p != '}') return WEIR_JSON_INVALID;
      s.p++;
      break;
    }
  }
  skip_ws(&s);
  if (s.p != s.end) return WEIR_JSON_INVALID;
  return found ? WEIR_JSON_FOUND : WEIR_JSON_MISSING;
}

bool weir_json_double(weir_json_value v, double *out) {
  if (v.kind != WEIR_JSON_NUMBER || v.raw.len >= 64) return false;
  char buf[64];
  memcpy(buf, v.raw.ptr, v.raw.len);
  buf[v.raw.len] = 0;
  char *end;
  *out = strtod(buf, &end);
  return end == buf + v.raw.len;
}

bool weir_json_int64(weir_json_value v, int64_t *out) {
  if (v.kind != WEIR_JSON_NUMBER || v.raw.len == 0) return false;
  const uint8_t *p = v.raw.ptr, *end = p + v.raw.len;
  bool negative = *p == '-';
  if (negative) p++;
  uint64_t n = 0, limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  if (p == end) return false;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9') return false;  // a fraction or an exponent
    uint64_t d = (uint64_t)(*p - '0');
    if (n > (limit - d) / 10) return false;
    n = n * 10 + d;
  }
  *out = negative ? (int64_t)(0 - n) : (int64_t)n;
  return true;
}

bool weir_json_bool(weir_json_value v, bool *out) {
  if (v.kind != WEIR_JSON_BOOL) return false;
  *out = v.raw.ptr[0] == 't';
  return true;
}

static size_t put_utf8(uint8_t *dst, size_t cap, size_t n, uint32_t c) {
  uint8_t b[4];
  size_t len;
  if (c < 0x80) {
    b[0] = (uint8_t)c;
    len = 1;
  } else if (c < 0x800) {
    b[0] = (uint8_t)(0xC0 | (c >> 6));
    b[1] = (uint8_t)(0x80 | (c & 0x3F));
    len = 2;
  } else if (c < 0x10000) {
    b[0] = (uint8_t)(0xE0 | (c >> 12));
    b[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    b[2] = (uint8_t)(0x80 | (c & 0x3F));
    len = 3;
  } else {
    b[0] = (uint8_t)(0xF0 | (c >> 18));
    b[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
    b[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    b[3] = (uint8_t)(0x80 | (c & 0x3F));
    len = 4;
  }
  for (size_t i = 0; i < len; i++) {
    if (n + i < cap) dst[n + i] = b[i];
  }
  return n + len;
}

static uint32_t hex_value(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    uint8_t c = p[i];
    v = v * 16 + (uint32_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  return v;
}

size_t weir_json_unescape(weir_bytes raw, uint8_t *dst, size_t cap) {
  // raw is a string token the scanner checked: quotes, then valid escapes.
  const uint8_t *p = raw.ptr + 1, *end = raw.ptr + raw.len - 1;
  size_t n = 0;
  while (p < end) {
    uint8_t c = *p++;
    if (c != '\\') {
      if (n < cap) dst[n] = c;
      n++;
      continue;
    }
    uint8_t e = *p++;
    switch (e) {
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        uint32_t u = hex_value(p);
        p += 4;
        // A surrogate pair makes one code point; a lone one becomes U+FFFD.
        if (u >= 0xD800 && u <= 0xDBFF && end - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
            hex4(p + 2)) {
          uint32_t lo = hex_value(p + 2);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            p += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
          } else {
            u = 0xFFFD;
          }
        } else if (u >= 0xD800 && u <= 0xDFFF) {
          u = 0xFFFD;
        }
        n = put_utf8(dst, cap, n, u);
        continue;
      }
      default: c = e; break;  // " \ /
    }
    if (n < cap) dst[n] = c;
    n++;
  }
  return n;
}
