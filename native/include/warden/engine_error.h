/* The error object of Warden's Rust engines (native/rust/ffi; wasmtime_engine.h, ort_engine.h), in
 * the style of wasmtime's C API: a call that can fail returns a WardenError* (NULL on success) and
 * writes its result through an out-parameter. An error carries a Triton error code and a message;
 * the addon turns it into the same JS error as a TRITONSERVER_Error (native/src/addon/module.cc
 * TritonError). */
#pragma once

#include "warden/tritonserver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct WardenError WardenError;

/* The error's code. */
TRITONSERVER_Error_Code warden_error_code(const WardenError* e);
/* The error's message, NUL-terminated, valid until warden_error_delete. */
const char* warden_error_message(const WardenError* e);
/* Frees an error (NULL is ignored). */
void warden_error_delete(WardenError* e);

#ifdef __cplusplus
}
#endif
