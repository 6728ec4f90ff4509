/* The C ABI of Warden's native data path (native/rust/data-path, linked into the addon through the
 * warden-native-rs staticlib; DESIGN "The native data path"). Used only by the addon's
 * binding (native/src/addon/data_path/). Conventions as wasmtime_engine.h (engine_error.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "warden/engine_error.h"
#include "warden/host.h"
#include "warden/ort_engine.h"
#include "warden/wasmtime_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The functions of libtritonserver.so the data path calls (enums travel as 32-bit integers). */
typedef struct WdHostApi {
  TRITONSERVER_Error* (*instance_execute)(TRITONBACKEND_ModelInstance* instance, const WARDEN_RequestDesc* requests,
                                          uint32_t count, WARDEN_ExecDoneFn done, void* userp);
  TRITONSERVER_Error* (*response_error)(TRITONSERVER_InferenceResponse* response);
  TRITONSERVER_Error* (*response_output_count)(TRITONSERVER_InferenceResponse* response, uint32_t* count);
  TRITONSERVER_Error* (*response_output)(TRITONSERVER_InferenceResponse* response, uint32_t index, const char** name,
                                         TRITONSERVER_DataType* datatype, const int64_t** shape, uint64_t* dim_count,
                                         const void** base, size_t* byte_size, TRITONSERVER_MemoryType* memory_type,
                                         int64_t* memory_type_id, void** userp);
  TRITONSERVER_Error* (*response_delete)(TRITONSERVER_InferenceResponse* response);
  TRITONSERVER_Error_Code (*error_code)(TRITONSERVER_Error* error);
  const char* (*error_message)(TRITONSERVER_Error* error);
  void (*error_delete)(TRITONSERVER_Error* error);
} WdHostApi;

typedef struct WdServerOptions {
  uint32_t threads;                     /* worker threads (>= 1) */
  uint64_t max_connections;             /* open at once, all addresses */
  uint64_t max_connections_per_address; /* 0 = no cap */
  uint64_t max_body_bytes;              /* bodies read here; longer ones stream to the control plane */
  uint64_t header_timeout_ms;
  uint64_t body_timeout_ms;
  uint64_t max_json_output_bytes; /* bound of a response's JSON tensor text (--http-max-json-output-bytes) */
  /* --http-restricted-api's `inference` restriction: only requests whose first header of this name
   * (lower case, NUL-terminated; NULL: none) holds exactly these bytes are served natively; the rest
   * go to the control plane, which refuses them. */
  const char* infer_restriction_header;
  const uint8_t* infer_restriction_value;
  size_t infer_restriction_value_len;
} WdServerOptions;

/* Statistics of one route since the last take (ns; see data-path/src/stats.rs). */
typedef struct WdRouteStats {
  uint64_t success_count, success_ns, fail_count, fail_ns;
  uint64_t timed_count, queue_ns, compute_input_ns, compute_infer_ns, compute_output_ns;
  uint64_t inference_count, execution_count;
  uint64_t batch1_count, batch1_input_ns, batch1_infer_ns, batch1_output_ns;
  uint64_t last_inference_ms;
} WdRouteStats;

typedef struct WdCounters {
  uint64_t served, forwarded, replayed, refused_connections, open_connections;
  uint64_t grpc_served, grpc_forwarded; /* gRPC calls served natively / forwarded to the gRPC server */
  uint64_t handed_over;                 /* /infer requests read here and answered by the control plane in-process */
  uint64_t moved_connections;           /* connections given to the control plane (wd_server_move_connections) */
} WdCounters;

typedef struct WdServer WdServer;
typedef struct WdRoute WdRoute;

/* Starts serving the listening socket `fd` (owned from here on); other requests go to the HTTP
 * listener on the unix socket `socket_path`. */
WardenError* wd_server_start(const WdHostApi* api, int fd, const char* socket_path, const WdServerOptions* options,
                             WdServer** out);
/* Serves the gRPC port too: the listening socket `fd` (owned from here on, also on failure); ModelInfer
 * calls of published routes are served natively, every other call goes over HTTP/2 to the gRPC server on
 * the unix socket `grpc_socket_path`. */
WardenError* wd_server_listen_grpc(const WdServer* server, int fd, const char* grpc_socket_path);
/* Publishes a route (JSON spec, see data-path/src/route.rs) over `count` instances lent until the
 * route is unpublished and its in-flight count is 0. */
WardenError* wd_server_publish(const WdServer* server, const uint8_t* spec, size_t spec_len,
                               TRITONBACKEND_ModelInstance* const* instances, size_t count, WdRoute** out);
/* Publishes a route served by sessions of Warden's ONNX Runtime engine (warden/ort_engine.h), run
 * on the data path's own threads, one run per session at a time; every output of the spec names its
 * datatype. The sessions are lent as the instances of wd_server_publish. */
WardenError* wd_server_publish_ort(const WdServer* server, const uint8_t* spec, size_t spec_len,
                                   const WoSession* const* sessions, size_t count, WdRoute** out);
/* Publishes a route served by wasmtime sandboxes (warden/wasmtime_engine.h): the data path queues
 * each request on one of the `count` instances' threads itself and answers it from what the guest
 * returns or sends; `execute_ms` is the instances' execute deadline (for its error text). The
 * instances are read during the call only: the route keeps handles on their threads that do not
 * keep them alive (a request for a thread that ended fails as the sandbox's). */
WardenError* wd_server_publish_wasm(const WdServer* server, const uint8_t* spec, size_t spec_len,
                                    const WwInstance* const* instances, size_t count, uint64_t execute_ms,
                                    WdRoute** out);
void wd_server_unpublish(const WdServer* server, const WdRoute* route);

/* The hand-over (data-path/src/js_infer.rs): plain /infer requests of models without a route are
 * read on the data path's threads and handed to the control plane, which answers them in-process. */
typedef struct WdJsRequest WdJsRequest;
/* A handed-over request's parts (valid while it lives; strings not NUL-terminated; an absent
 * header has length -1; version -1: the model's policy). */
typedef struct WdJsRequestParts {
  uint64_t token;
  const uint8_t* model;
  size_t model_len;
  int64_t version;
  const uint8_t* body;
  size_t body_len;
  const uint8_t* header_length; /* Inference-Header-Content-Length */
  int64_t header_length_len;
  const uint8_t* authorization;
  int64_t authorization_len;
} WdJsRequestParts;
/* Any data path thread: a new request (the callee owns it until wd_js_answer / wd_js_decline), or,
 * with `request` NULL, the client of request `cancelled` went away. */
typedef void (*WdJsNotifyFn)(void* ctx, WdJsRequest* request, uint64_t cancelled);
/* Starts the hand-over of requests with bodies shorter than `max_body_bytes`; INVALID_ARG when set already. */
WardenError* wd_server_set_js_infer(const WdServer* server, WdJsNotifyFn notify, void* ctx, uint64_t max_body_bytes);
void wd_js_request_parts(const WdJsRequest* request, WdJsRequestParts* out);
/* Answers and frees the request: status, `n` headers, body (all copied). */
void wd_js_answer(WdJsRequest* request, uint16_t status, const uint8_t* const* names, const size_t* name_lens,
                  const uint8_t* const* values, const size_t* value_lens, size_t n, const uint8_t* body,
                  size_t body_len);
/* Declines and frees the request: the data path forwards it to the control plane's internal listener. */
void wd_js_decline(WdJsRequest* request);
/* Moving connections (data-path/src/moving.rs): a keep-alive connection that sent a handed-over request
 * is given to the control plane once that request is answered: `give` gets its socket (owned by the
 * callee from here on) and a token; the callee calls wd_server_release_connection(token) once it has
 * closed it (its slot under the connection caps is taken until then). INVALID_ARG when set already. */
typedef void (*WdMoveFn)(void* ctx, int fd, uint64_t token);
WardenError* wd_server_move_connections(const WdServer* server, WdMoveFn give, void* ctx);
void wd_server_release_connection(const WdServer* server, uint64_t token);
uint64_t wd_route_inflight(const WdRoute* route);
void wd_route_take_stats(const WdRoute* route, WdRouteStats* out);
/* Executions of one batch size other than 1 since the last take (ns). */
typedef struct WdBatchStats {
  uint64_t batch_size, count, input_ns, infer_ns, output_ns;
} WdBatchStats;
/* Moves up to `cap` batch sizes' rows into `out`; returns how many (fewer than `cap`: none are left). */
size_t wd_route_take_batch_stats(const WdRoute* route, WdBatchStats* out, size_t cap);
/* The latest end-to-end durations of successful requests (`queue` false) or queue times (`queue` true)
 * since the last take, in µs, oldest first: up to WD_RECENT into `out`; returns how many. */
#define WD_RECENT 512
size_t wd_route_take_recent(const WdRoute* route, bool queue, uint32_t out[WD_RECENT]);
void wd_route_free(WdRoute* route);
void wd_server_counters(const WdServer* server, WdCounters* out);
void wd_server_set_paused(const WdServer* server, bool paused);
void wd_server_begin_close(const WdServer* server);
void wd_server_free(WdServer* server);

#ifdef __cplusplus
}
#endif
