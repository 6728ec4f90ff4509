/* The C ABI of Warden's in-process ONNX Runtime engine (native/rust/ort-engine, linked into the
 * addon through the warden-native-rs staticlib). Used by the addon's binding
 * (native/src/addon/ort/); the native data path runs the same sessions through the crate's Rust
 * API (native/rust/data-path/src/ort_exec.rs, warden/data_path.h wd_server_publish_ort).
 * Conventions as wasmtime_engine.h (engine_error.h); ONNX Runtime's own failures are INTERNAL.
 * Element types are ONNX's TensorProto.DataType codes (FLOAT 1 … BFLOAT16 16); strings are not
 * passed (the backend runs such models through onnxruntime-node). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "warden/engine_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WO_MAX_RANK 32

typedef struct WoSession WoSession;

typedef struct {
  uint32_t index; /* session input index */
  int32_t elem_type;
  uint32_t rank; /* <= WO_MAX_RANK */
  const int64_t* shape;
  const uint8_t* data; /* borrowed for the call; copied if not aligned to the element size */
  size_t bytes;
} WoInput;

typedef struct {
  void* value; /* release with wo_value_release; data is valid until then */
  int32_t elem_type;
  uint32_t rank;
  int64_t shape[WO_MAX_RANK];
  const uint8_t* data;
  size_t bytes;
} WoOutput;

/* Loads ONNX Runtime (once per process); UNAVAILABLE if the library does not load. */
WardenError* wo_init(const char* lib_path);
WardenError* wo_session_open(const char* path, uint32_t intra, uint32_t inter, WoSession** out);
void wo_session_close(WoSession* s);
size_t wo_session_count(const WoSession* s, bool output);
const char* wo_session_name(const WoSession* s, bool output, size_t i);
int32_t wo_session_type(const WoSession* s, bool output, size_t i);
/* On success the caller releases every outputs[k].value; on failure nothing is left to release. */
WardenError* wo_session_run(const WoSession* s, const WoInput* inputs, size_t n_in, const uint32_t* out_index,
                            size_t n_out, WoOutput* outputs);
void wo_value_release(void* value);

#ifdef __cplusplus
}
#endif
