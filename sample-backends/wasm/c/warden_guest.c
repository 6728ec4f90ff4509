// See warden_guest.h.
#include "warden_guest.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// The component type is added by `jco embed` from the WIT, not by wit-bindgen's object file.
void __component_type_object_force_link_sandboxed_backend(void) {}

// A printf subset (%s, %.*s, %d, %lld, %%) that needs no stdio: wasi-libc's stdio would pull in
// WASI file-descriptor imports, and a sandboxed backend imports no WASI it does not need.
static void vset(sandboxed_backend_string_t *s, const char *fmt, va_list ap) {
  char buf[512];
  size_t o = 0;
#define PUT(ch) do { if (o + 1 < sizeof buf) buf[o++] = (ch); } while (0)
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') { PUT(*f); continue; }
    f++;
    if (*f == '%') { PUT('%'); continue; }
    if (f[0] == 's' || (f[0] == '.' && f[1] == '*' && f[2] == 's')) {
      int max = -1;
      if (f[0] == '.') { max = va_arg(ap, int); f += 2; }
      const char *str = va_arg(ap, const char *);
      for (int i = 0; str && str[i] && (max < 0 || i < max); i++) PUT(str[i]);
      continue;
    }
    long long v;
    if (f[0] == 'd') v = va_arg(ap, int);
    else if (f[0] == 'l' && f[1] == 'l' && f[2] == 'd') { v = va_arg(ap, long long); f += 2; }
    else { PUT('?'); continue; }
    char digits[24];
    int n = 0;
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    do { digits[n++] = (char)('0' + u % 10); u /= 10; } while (u);
    if (v < 0) PUT('-');
    while (n) PUT(digits[--n]);
  }
#undef PUT
  sandboxed_backend_string_dup_n(s, buf, o);
}

void wg_set_error(wg_error_t *err, uint8_t code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err->code = code;
  vset(&err->message, fmt, ap);
  va_end(ap);
}

void wg_log(uint8_t level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sandboxed_backend_string_t s;
  vset(&s, fmt, ap);
  va_end(ap);
  warden_backend_host_log(level, &s);
  sandboxed_backend_string_free(&s);
}

static bool str_eq(const sandboxed_backend_string_t *s, const char *c) {
  size_t n = strlen(c);
  return s->len == n && memcmp(s->ptr, c, n) == 0;
}

const wg_tensor_t *wg_input(const wg_request_t *req, const char *name) {
  for (size_t i = 0; i < req->inputs.len; i++)
    if (str_eq(&req->inputs.ptr[i].name, name)) return &req->inputs.ptr[i];
  return NULL;
}

bool wg_requested(const wg_request_t *req, const char *name) {
  for (size_t i = 0; i < req->requested_outputs.len; i++)
    if (str_eq(&req->requested_outputs.ptr[i], name)) return true;
  return false;
}

size_t wg_element_count(const int64_t *shape, size_t rank) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= (size_t)shape[i];
  return n;
}

bool wg_tensor_init(wg_tensor_t *t, const char *name, uint8_t datatype, const int64_t *shape, size_t rank, size_t bytes) {
  memset(t, 0, sizeof *t);
  t->datatype = datatype;
  t->shape.ptr = rank ? malloc(rank * sizeof(int64_t)) : NULL;
  t->data.ptr = bytes ? calloc(bytes, 1) : NULL;
  if ((rank && !t->shape.ptr) || (bytes && !t->data.ptr)) {
    free(t->shape.ptr);
    free(t->data.ptr);
    return false;
  }
  if (rank) memcpy(t->shape.ptr, shape, rank * sizeof(int64_t));
  t->shape.len = rank;
  t->data.len = bytes;
  sandboxed_backend_string_dup(&t->name, name);
  return true;
}

// --- JSON

static const char *ws(const char *p, const char *e) {
  while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

// Skips one JSON value starting at p; returns the position after it, or NULL if malformed.
static const char *skip(const char *p, const char *e) {
  p = ws(p, e);
  if (p >= e) return NULL;
  if (*p == '"') {
    for (p++; p < e; p++) {
      if (*p == '\\') p++;
      else if (*p == '"') return p + 1;
    }
    return NULL;
  }
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = ws(p + 1, e);
    if (p < e && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = skip(p, e);  // key
        if (!p) return NULL;
        p = ws(p, e);
        if (p >= e || *p != ':') return NULL;
        p++;
      }
      p = skip(p, e);
      if (!p) return NULL;
      p = ws(p, e);
      if (p < e && *p == ',') {
        p++;
        continue;
      }
      if (p < e && *p == close) return p + 1;
      return NULL;
    }
  }
  while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
  return p;
}

wg_json_t wg_json_member(wg_json_t obj, const char *key) {
  wg_json_t none = {NULL, NULL};
  if (!obj.p) return none;
  const char *p = ws(obj.p, obj.end), *e = obj.end;
  if (p >= e || *p != '{') return none;
  p = ws(p + 1, e);
  size_t klen = strlen(key);
  while (p < e && *p == '"') {
    const char *kstart = p + 1;
    const char *kend = skip(p, e);
    if (!kend) return none;
    p = ws(kend, e);
    if (p >= e || *p != ':') return none;
    p = ws(p + 1, e);
    const char *vend = skip(p, e);
    if (!vend) return none;
    if ((size_t)(kend - 1 - kstart) == klen && memcmp(kstart, key, klen) == 0) return (wg_json_t){p, vend};
    p = ws(vend, e);
    if (p < e && *p == ',') p = ws(p + 1, e);
  }
  return none;
}

wg_json_t wg_json_index(wg_json_t arr, size_t i) {
  wg_json_t none = {NULL, NULL};
  if (!arr.p) return none;
  const char *p = ws(arr.p, arr.end), *e = arr.end;
  if (p >= e || *p != '[') return none;
  p = ws(p + 1, e);
  for (size_t k = 0; p < e && *p != ']'; k++) {
    const char *vend = skip(p, e);
    if (!vend) return none;
    if (k == i) return (wg_json_t){p, vend};
    p = ws(vend, e);
    if (p < e && *p == ',') p = ws(p + 1, e);
  }
  return none;
}

size_t wg_json_length(wg_json_t arr) {
  size_t n = 0;
  while (wg_json_index(arr, n).p) n++;
  return n;
}

double wg_json_number(wg_json_t v, bool *ok) {
  char buf[64];
  size_t n = v.p ? (size_t)(v.end - v.p) : 0;
  *ok = false;
  if (n == 0 || n >= sizeof buf) return 0;
  memcpy(buf, v.p, n);
  buf[n] = 0;
  char *endp;
  double d = strtod(buf, &endp);
  *ok = endp != buf && *endp == 0;
  return d;
}

bool wg_json_string(wg_json_t v, char *buf, size_t cap) {
  if (!v.p || *v.p != '"') return false;
  size_t o = 0;
  for (const char *p = v.p + 1; p < v.end - 1; p++) {
    if (*p == '\\') p++;
    if (o + 1 >= cap) return false;
    buf[o++] = *p;
  }
  buf[o] = 0;
  return true;
}
