/* The C ABI of Warden's wasmtime engine (native/rust/wasmtime-engine, linked into the addon through
 * the warden-native-rs staticlib). Used only by the addon's binding (native/src/addon/wasmtime/).
 * Conventions (engine_error.h): a function returning WardenError* returns NULL on success and sets
 * its out-parameters; object arguments are never NULL (the *_free functions ignore NULL); no Rust
 * panic unwinds into the caller. Messages (ww_message_*) are posted from native threads to
 * `notify` and owned by its callee. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "warden/engine_error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct WwEngine WwEngine;
typedef struct WwComponent WwComponent;
typedef struct WwInstance WwInstance;
typedef struct WwMessage WwMessage;
typedef struct WwBuffer WwBuffer;
typedef void (*ww_notify_fn)(void* ctx, WwMessage* msg);

/* INVALID_ARG: bad options JSON, or a configuration wasmtime refuses. */
WardenError* ww_engine_new(const uint8_t* json, size_t len, ww_notify_fn notify, void* ctx, WwEngine** out);
void ww_engine_free(WwEngine* e);
/* The compile-cache key part: *len hex bytes, valid while the engine lives. */
const uint8_t* ww_engine_config_key(const WwEngine* e, size_t* len);

/* INVALID_ARG: not a component, or one the engine cannot link. Blocking. */
WardenError* ww_component_compile(const WwEngine* e, const uint8_t* bytes, size_t len, WwComponent** out);
/* Compile cache (cwasm.rs): key and mac 32 bytes, hash 64 hex; check: 1 MAC over the bytes, 2 verified
   stamp; on failure miss: 1 absent (NOT_FOUND), 2 unreadable, 3 MAC, 4 refused. Blocking. */
WardenError* ww_component_load_cached(const WwEngine* e, const uint8_t* path, size_t path_len, const uint8_t* key,
                                      const uint8_t* hash, size_t hash_len, const uint8_t* mac, uint64_t max_bytes,
                                      uint64_t settle_ms, int32_t* check, int32_t* miss, WwComponent** out);
/* The cache MAC (32 bytes into out) of a serialized component. */
WardenError* ww_cwasm_mac(const WwEngine* e, const uint8_t* key, const uint8_t* hash, size_t hash_len,
                          const uint8_t* payload, size_t len, uint8_t* out);
WardenError* ww_component_serialize(const WwComponent* c, WwBuffer** out);
void ww_component_free(WwComponent* c);
/* -1 for a malformed binary. */
int64_t ww_count_memories(const uint8_t* bytes, size_t len);

WardenError* ww_instance_new(const WwEngine* e, const WwComponent* c, uint64_t id, const uint8_t* json, size_t len,
                             WwInstance** out);
/* desc: a requests descriptor (native/rust/wasmtime-engine/src/descriptor.rs), copied; the buffers are
   read in place until the execute's terminal message. *queued: false if the thread ended. */
WardenError* ww_instance_execute(const WwInstance* i, const uint8_t* desc, size_t len, const uint8_t* const* ptrs,
                                 const size_t* lens, size_t n, bool* queued);
/* Answers the pending CALL (buffers copied). *delivered: false if the thread ended. */
WardenError* ww_instance_reply(const WwInstance* i, const uint8_t* json, size_t len, const uint8_t* const* ptrs,
                               const size_t* lens, size_t n, bool* delivered);
void ww_instance_free(WwInstance* i);

uint64_t ww_message_instance(const WwMessage* m);
uint32_t ww_message_kind(const WwMessage* m);
/* *len bytes, not NUL-terminated, valid until ww_message_free. */
const uint8_t* ww_message_json(const WwMessage* m, size_t* len);
size_t ww_message_buffer_count(const WwMessage* m);
/* Buffer i, now the caller's; NULL if already taken. */
WwBuffer* ww_message_take_buffer(WwMessage* m, size_t i);
void ww_message_free(WwMessage* m);

/* The buffer's *len bytes (NULL when empty), in place until ww_buffer_free. */
uint8_t* ww_buffer_data(WwBuffer* b, size_t* len);
void ww_buffer_free(WwBuffer* b);

#ifdef __cplusplus
}
#endif
