/* The C ABI of Warden's in-process ONNX Runtime engine (native/ort, a Rust rlib carried by the
 * addon's one Rust staticlib). Used only by the addon's binding (native/src/ort/binding.cc).
 * Every function catches Rust panics; functions with an `err` out-parameter set it (free with
 * wo_string_free) and return NULL/false on failure.
 * Element types are ONNX's TensorProto.DataType codes (FLOAT 1 … BFLOAT16 16); strings are not
 * passed (the backend runs such models through onnxruntime-node). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WO_MAX_RANK 32

typedef struct EngineSession WoSession;

typedef struct {
  uint32_t index;    /* session input index */
  int32_t elem_type;
  uint32_t rank;     /* <= WO_MAX_RANK */
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

void wo_string_free(char* s);
bool wo_init(const char* lib_path, char** err);
WoSession* wo_session_open(const char* path, uint32_t intra, uint32_t inter, char** err);
void wo_session_close(WoSession* s);
size_t wo_session_count(const WoSession* s, bool output);
const char* wo_session_name(const WoSession* s, bool output, size_t i);
int32_t wo_session_type(const WoSession* s, bool output, size_t i);
bool wo_session_run(const WoSession* s, const WoInput* inputs, size_t n_in, const uint32_t* out_index, size_t n_out, WoOutput* outputs, char** err);
void wo_value_release(void* value);

#ifdef __cplusplus
}
#endif
