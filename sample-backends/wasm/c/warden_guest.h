// Helpers for C sandboxed backends on top of the wit-bindgen bindings of
// `warden:backend/sandboxed-backend` (gen/sandboxed_backend.h): errors, input lookup, tensor
// construction and a small read-only JSON navigator for the model configuration.
// Everything handed back to the host must be malloc'ed: the bindings' post-return frees it.
#ifndef WARDEN_GUEST_H
#define WARDEN_GUEST_H

#include "sandboxed_backend.h"

typedef warden_backend_types_error_t wg_error_t;
typedef warden_backend_types_tensor_t wg_tensor_t;
typedef warden_backend_types_request_t wg_request_t;
typedef warden_backend_types_response_t wg_response_t;

// Fills `err` with `code` (WARDEN_BACKEND_TYPES_ERROR_CODE_*) and a message formatted with a
// printf subset: %s, %.*s, %d, %lld, %%.
void wg_set_error(wg_error_t *err, uint8_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// Logs a printf-formatted line through host.log at `level` (WARDEN_BACKEND_HOST_LOG_LEVEL_*).
void wg_log(uint8_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// The input called `name` of `req`, or NULL.
const wg_tensor_t *wg_input(const wg_request_t *req, const char *name);

// True if `req` asked for output `name`.
bool wg_requested(const wg_request_t *req, const char *name);

// Initialises `t` as a tensor called `name` with a copy of `shape` and `bytes` zeroed bytes of
// data (malloc'ed). Returns false if memory ran out.
bool wg_tensor_init(wg_tensor_t *t, const char *name, uint8_t datatype, const int64_t *shape, size_t rank, size_t bytes);

// Number of elements of a shape (product of dims).
size_t wg_element_count(const int64_t *shape, size_t rank);

// --- JSON (the model configuration as GET /v2/models/<m>/config prints it)

// A span of JSON text.
typedef struct {
  const char *p;
  const char *end;
} wg_json_t;

// The value of member `key` of the object `obj`; .p == NULL if absent or `obj` is no object.
wg_json_t wg_json_member(wg_json_t obj, const char *key);
// Element `i` of the array `arr`; .p == NULL if absent.
wg_json_t wg_json_index(wg_json_t arr, size_t i);
// Number of elements of the array `arr` (0 if not an array).
size_t wg_json_length(wg_json_t arr);
// The value as a number (0 and *ok = false if it is not one).
double wg_json_number(wg_json_t v, bool *ok);
// Copies a JSON string value (no escapes decoded beyond \" and \\) into buf; false if not a string or too long.
bool wg_json_string(wg_json_t v, char *buf, size_t cap);

#endif
