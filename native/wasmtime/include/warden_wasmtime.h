/* The C ABI of Warden's wasmtime engine (native/wasmtime, a Rust staticlib). Used only by the
 * addon's binding (native/src/wasmtime/binding.cc). Every function catches Rust panics; functions
 * with an `err` out-parameter set it (free with ww_string_free) and return NULL/false on failure.
 * Messages (ww_message_*) are posted from native threads to `notify` and owned by its callee. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct WwEngine WwEngine;
typedef struct WwComponent WwComponent;
typedef struct WwInstance WwInstance;
typedef struct WwMessage WwMessage;
typedef void (*ww_notify_fn)(void* ctx, WwMessage* msg);

void ww_string_free(char* s);

WwEngine* ww_engine_new(const uint8_t* json, size_t len, ww_notify_fn notify, void* ctx, char** err);
void ww_engine_free(WwEngine* e);
size_t ww_engine_config_key(const WwEngine* e, uint8_t* out, size_t cap);

WwComponent* ww_component_compile(const WwEngine* e, const uint8_t* bytes, size_t len, char** err);
/* Compile cache (cwasm.rs): key, hash of 64 hex, mac 32 bytes; check: 1 MAC over the bytes, 2 verified stamp;
   miss: 1 absent, 2 unreadable, 3 MAC, 4 refused. */
WwComponent* ww_component_load_cached(const WwEngine* e, const uint8_t* path, size_t path_len, const uint8_t* key, const uint8_t* hash, size_t hash_len,
                                      const uint8_t* mac, uint64_t max_bytes, uint64_t settle_ms, int32_t* check, int32_t* miss, char** err);
bool ww_cwasm_mac(const WwEngine* e, const uint8_t* key, const uint8_t* hash, size_t hash_len, const uint8_t* payload, size_t len, uint8_t* out);
WwMessage* ww_component_serialize(const WwComponent* c, char** err);
void ww_component_free(WwComponent* c);
int64_t ww_count_memories(const uint8_t* bytes, size_t len);

WwInstance* ww_instance_new(const WwEngine* e, const WwComponent* c, uint64_t id, const uint8_t* json, size_t len, char** err);
/* desc: a requests descriptor (native/wasmtime/src/descriptor.rs) */
bool ww_instance_execute(const WwInstance* i, const uint8_t* desc, size_t len, const uint8_t* const* ptrs, const size_t* lens, size_t n, char** err);
bool ww_instance_reply(const WwInstance* i, const uint8_t* json, size_t len, const uint8_t* const* ptrs, const size_t* lens, size_t n, char** err);
void ww_instance_free(WwInstance* i);

uint64_t ww_message_instance(const WwMessage* m);
uint32_t ww_message_kind(const WwMessage* m);
const uint8_t* ww_message_json(const WwMessage* m, size_t* len);
size_t ww_message_buffer_count(const WwMessage* m);
void* ww_message_take_buffer(WwMessage* m, size_t i, uint8_t** data, size_t* len);
void ww_buffer_free(void* b);
void ww_message_free(WwMessage* m);

#ifdef __cplusplus
}
#endif
