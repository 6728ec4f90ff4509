/*
 * Warden's embedding interface to its Triton backend host (libtritonserver.so).
 *
 * Not part of Triton's API: this is what the Node addon (native/src/addon) and the standalone
 * drivers (native/test) use to load backend libraries, models and instances and to run requests.
 * Everything is C so the boundary is ABI-stable; errors are TRITONSERVER_Error* owned by the
 * caller. Nothing here touches JavaScript.
 *
 * Threading: WARDEN_BackendLoad / WARDEN_ModelLoad / WARDEN_ModelUnload / WARDEN_BackendUnload call
 * into the backend synchronously on the calling thread (call them off the JS thread). Instances own
 * (or, with TRITONBACKEND_EXECUTION_DEVICE_BLOCKING, share) a native worker thread: initialize,
 * execute and finalize run there and report through callbacks invoked on that thread.
 */
#ifndef WARDEN_HOST_H
#define WARDEN_HOST_H

#include "warden/tritonbackend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ logging */

/** Receives every TRITONSERVER_LogMessage whose level is enabled; called on any thread. */
typedef void (*WARDEN_LogFn)(void* userp, TRITONSERVER_LogLevel level, const char* file, int line, const char* msg);
/** Install the log sink (NULL = drop) and the levels TRITONSERVER_LogIsEnabled reports. */
TRITONSERVER_DECLSPEC void WARDEN_SetLogSink(WARDEN_LogFn fn, void* userp, bool info, bool warn, bool error,
                                             bool verbose);

/* ------------------------------------------------------------------ wake affinity */

/*
 * Thread hand-off placement (src/core/wake.cc explains why): a thread about to wake a thread that
 * sleeps waiting for work calls WARDEN_WakeAffinityPlace(tid, recent_work_ns) first; when nothing
 * native is running in the process and the sleeper's recent jobs were short, it is moved onto the
 * caller's CPU (true returned). The woken thread
 * calls WARDEN_WakeAffinityBegin(moved) before the work (restoring the process's CPU mask when it
 * was moved) and WARDEN_WakeAffinityEnd() after it. Instance workers, the wasmtime engine's
 * instance threads and (from the parent process) backend-host ring readers use it. On by default;
 * WARDEN_SetWakeAffinity(false) turns placement off.
 */
TRITONSERVER_DECLSPEC void WARDEN_SetWakeAffinity(bool on);
/** Jobs whose moving average is longer than this (ns) are not worth placing (wake.cc). */
#define WARDEN_WAKE_AFFINITY_MAX_WORK_NS 100000u
/** `recent_work_ns`: the sleeper's moving average of its jobs' duration (0 = none yet). */
TRITONSERVER_DECLSPEC bool WARDEN_WakeAffinityPlace(int32_t tid, uint64_t recent_work_ns);
/** The moving average both sides keep: avg + (sample - avg) / 8, in ns, each sample capped at 4×
 *  the limit so one long job (a slow initialize) delays placement by ~11 short jobs, not hundreds. */
static inline uint64_t WARDEN_WakeAffinityAverage(uint64_t avg, uint64_t sample_ns) {
  if (sample_ns > 4 * WARDEN_WAKE_AFFINITY_MAX_WORK_NS) sample_ns = 4 * WARDEN_WAKE_AFFINITY_MAX_WORK_NS;
  return sample_ns >= avg ? avg + (sample_ns - avg) / 8 : avg - (avg - sample_ns) / 8;
}
TRITONSERVER_DECLSPEC void WARDEN_WakeAffinityBegin(bool moved);
TRITONSERVER_DECLSPEC void WARDEN_WakeAffinityEnd(void);
/** Put the calling thread back on the process's CPU mask (for a thread another process may place:
 *  a backend-host process's ring reader, which the parent places before ringing its doorbell). */
TRITONSERVER_DECLSPEC void WARDEN_WakeAffinityRestore(void);
/** Marks the calling thread as an event-loop thread (the addon's, once per Node environment):
 *  when it places a thread, it is itself kept on that CPU until WARDEN_WakeAffinityUnpinSelf. */
TRITONSERVER_DECLSPEC void WARDEN_WakeAffinityMarkLoopThread(void);
/** An event-loop thread that placed a thread is kept on the same CPU until it calls this (when the
 *  answer of the placed work reaches it): puts it back on the process's CPU mask. Cheap when not
 *  pinned. */
TRITONSERVER_DECLSPEC void WARDEN_WakeAffinityUnpinSelf(void);
/** How many times WARDEN_WakeAffinityPlace moved a thread in this process. */
TRITONSERVER_DECLSPEC uint64_t WARDEN_WakeAffinityPlacements(void);

/* ------------------------------------------------------------------ backends */

/**
 * dlopen(`library_path`, RTLD_NOW | RTLD_LOCAL) (after making this library's symbols global),
 * resolve the entry points (TRITONBACKEND_ModelInstanceExecute is required), call
 * TRITONBACKEND_Initialize and TRITONBACKEND_GetBackendAttribute. On any failure the library is
 * closed and nothing is kept.
 * @param name backend name (`backend:` in the config).
 * @param artifacts_dir what TRITONBACKEND_BackendArtifacts reports (the library's directory).
 * @param config_json BackendConfig message: {"cmdline":{...}}.
 */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_BackendLoad(const char* name, const char* library_path,
                                                             const char* artifacts_dir, const char* config_json,
                                                             TRITONBACKEND_Backend** backend);
/** Attributes gathered after Initialize: parallel instance loading, execution policy, and the
 *  preferred instance groups as JSON [{"kind":"KIND_CPU","count":N,"gpus":[..]}] (backend-owned). */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_BackendAttributes(TRITONBACKEND_Backend* backend,
                                                                   bool* parallel_instance_loading,
                                                                   TRITONBACKEND_ExecutionPolicy* policy,
                                                                   const char** preferred_groups_json);
/** TRITONBACKEND_Finalize, dlclose, free. All models must be unloaded first. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_BackendUnload(TRITONBACKEND_Backend* backend);

/* ------------------------------------------------------------------ models */

typedef struct WARDEN_ModelDesc {
  const char* name;
  uint64_t version;
  /** `<repository>/<model>`: what TRITONBACKEND_ModelRepository reports. */
  const char* repository_path;
  /** Normalised model config JSON (what TRITONBACKEND_ModelConfig returns). */
  const char* config_json;
  bool auto_complete_config;
  /** Names of the config's outputs (TRITONBACKEND_ResponseOutput accepts only these). */
  const char* const* output_names;
  uint32_t output_count;
  bool decoupled;
  /** The embedding host's id for this model's principal: reported to WARDEN_ServerHooks by the
   *  TRITONSERVER_Server handle TRITONBACKEND_ModelServer returns for this model. */
  uint64_t server_owner;
} WARDEN_ModelDesc;

/** Create the model and call TRITONBACKEND_ModelInitialize; on error nothing is kept. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_ModelLoad(TRITONBACKEND_Backend* backend, const WARDEN_ModelDesc* desc,
                                                           TRITONBACKEND_Model** model);
/** The JSON the backend passed to TRITONBACKEND_ModelSetConfig during ModelInitialize, or NULL. */
TRITONSERVER_DECLSPEC const char* WARDEN_ModelSetConfigJson(TRITONBACKEND_Model* model);
/** Replace the config after the host re-normalised a backend's auto-complete (before instances). */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_ModelUpdateConfig(TRITONBACKEND_Model* model, const char* config_json,
                                                                   const char* const* output_names,
                                                                   uint32_t output_count, bool decoupled);
/** Backend objects of the model alive now: responses neither sent nor deleted, response factories
 *  not deleted. Read after the instances finalized, what is left was leaked by the backend. */
TRITONSERVER_DECLSPEC void WARDEN_ModelLiveObjects(TRITONBACKEND_Model* model, int64_t* responses, int64_t* factories);
/** TRITONBACKEND_ModelFinalize and free; every instance must be deleted first. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_ModelUnload(TRITONBACKEND_Model* model);

/* ------------------------------------------------------------------ instances */

typedef struct WARDEN_InstanceDesc {
  const char* name;
  TRITONSERVER_InstanceGroupKind kind;
  int32_t device_id;
  /** Host policy name; TRITONBACKEND_ModelInstanceHostPolicy reports {"<name>":{}}. */
  const char* host_policy_name;
  bool passive;
  const char* const* profiles;
  uint32_t profile_count;
  const char* const* secondary_device_kinds;
  const int64_t* secondary_device_ids;
  uint32_t secondary_device_count;
} WARDEN_InstanceDesc;

/** Called on the instance's worker thread; the callee owns `error` (NULL = success). */
typedef void (*WARDEN_DoneFn)(void* userp, TRITONSERVER_Error* error);

/** Create an instance (no backend call yet) bound to its worker thread. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_InstanceNew(TRITONBACKEND_Model* model,
                                                             const WARDEN_InstanceDesc* desc,
                                                             TRITONBACKEND_ModelInstance** instance);
/** Queue TRITONBACKEND_ModelInstanceInitialize on the worker. */
TRITONSERVER_DECLSPEC void WARDEN_InstanceInitialize(TRITONBACKEND_ModelInstance* instance, WARDEN_DoneFn done,
                                                     void* userp);
/** Queue TRITONBACKEND_ModelInstanceFinalize on the worker: called whenever Initialize was called,
 *  even if it failed (as Triton does), so the backend can release what it set up. */
TRITONSERVER_DECLSPEC void WARDEN_InstanceFinalize(TRITONBACKEND_ModelInstance* instance, WARDEN_DoneFn done,
                                                   void* userp);
/** Stop (or release a shared) worker and free the instance; after WARDEN_InstanceFinalize's done. */
TRITONSERVER_DECLSPEC void WARDEN_InstanceDelete(TRITONBACKEND_ModelInstance* instance);
/** TRITONBACKEND_ModelInstanceReady if the backend has it, else NULL (ready). Caller's thread. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_InstanceReady(TRITONBACKEND_ModelInstance* instance);

/* ------------------------------------------------------------------ requests */

typedef struct WARDEN_InputDesc {
  const char* name;
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims_count;
  /** CPU memory, borrowed: must stay valid until the request's release callback. */
  const void* data;
  uint64_t byte_size;
} WARDEN_InputDesc;

typedef struct WARDEN_ParamDesc {
  const char* key;
  TRITONSERVER_ParameterType type; /* STRING, INT, BOOL or DOUBLE */
  const char* string_value;
  int64_t int_value;
  bool bool_value;
  double double_value;
} WARDEN_ParamDesc;

/** Per-request statistics the backend reported (TRITONBACKEND_ModelInstanceReportStatistics),
 *  and how the request was released. */
typedef struct WARDEN_RequestStats {
  bool reported;
  bool success;
  uint64_t exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns;
  /** Released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE (WARDEN_RequestDesc.reschedulable):
   *  the host runs the request again (as a new request); this one gets no FINAL, see
   *  WARDEN_RESPONSE_CLOSED. Set whether or not statistics were reported. */
  bool rescheduled;
} WARDEN_RequestStats;

/** WARDEN_ResponseFn flag, never with FINAL and always with a NULL response: a request released
 *  with RESCHEDULE will send nothing more (its response factories and unsent responses are gone).
 *  It replaces the FINAL such a request never sends: one call per request carries FINAL or this. */
#define WARDEN_RESPONSE_CLOSED 0x80000000u

/** A response for a request (may be NULL with FINAL: flags-only). Callee owns `response` and frees
 *  it with TRITONSERVER_InferenceResponseDelete. Called on whatever thread the backend sends from,
 *  in send order per request; exactly one call per request carries TRITONSERVER_RESPONSE_COMPLETE_FINAL
 *  (or, for a request released with RESCHEDULE that sent no FINAL, WARDEN_RESPONSE_CLOSED). */
typedef void (*WARDEN_ResponseFn)(void* userp, TRITONSERVER_InferenceResponse* response, uint32_t flags);
/** The backend released the request: its input buffers are no longer referenced. Exactly once. */
typedef void (*WARDEN_ReleaseFn)(void* userp, const WARDEN_RequestStats* stats);

typedef struct WARDEN_RequestDesc {
  const char* id;
  /** Used when correlation_id_string is NULL. */
  uint64_t correlation_id;
  const char* correlation_id_string;
  uint32_t flags;
  uint64_t timeout_us;
  uint64_t priority;
  bool cancelled;
  const WARDEN_InputDesc* inputs;
  uint32_t input_count;
  const char* const* requested_outputs;
  uint32_t requested_output_count;
  const WARDEN_ParamDesc* parameters;
  uint32_t parameter_count;
  WARDEN_ResponseFn response_fn;
  WARDEN_ReleaseFn release_fn;
  void* userp;
  /** The host's scheduler can run this request again (an iterative sequence's request without
   *  END): TRITONBACKEND_RequestRelease accepts TRITONSERVER_REQUEST_RELEASE_RESCHEDULE. Otherwise
   *  that release fails with Triton's INVALID_ARG and the backend keeps the request. */
  bool reschedulable;
} WARDEN_RequestDesc;

typedef struct WARDEN_ExecStats {
  /** TRITONBACKEND_ModelInstanceReportBatchStatistics was called during this execution. */
  bool reported;
  uint64_t batch_size;
  uint64_t exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns;
  /** CLOCK_MONOTONIC ns when TRITONBACKEND_ModelInstanceExecute returned (always set). */
  uint64_t returned_ns;
} WARDEN_ExecStats;

/** After TRITONBACKEND_ModelInstanceExecute returned. If it returned an error, that error was
 *  already delivered as the final response of every request and the requests released; `error` is a
 *  copy, owned by the callee. */
typedef void (*WARDEN_ExecDoneFn)(void* userp, TRITONSERVER_Error* error, const WARDEN_ExecStats* stats);

/** Build the TRITONBACKEND_Request objects (metadata copied, input data borrowed) and queue one
 *  TRITONBACKEND_ModelInstanceExecute call for them on the instance's worker. */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_InstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                                 const WARDEN_RequestDesc* requests, uint32_t count,
                                                                 WARDEN_ExecDoneFn done, void* userp);

/** Take ownership of an output's buffer (malloc'd; free with free()); the response keeps metadata. */
TRITONSERVER_DECLSPEC void* WARDEN_InferenceResponseOutputTakeBuffer(TRITONSERVER_InferenceResponse* response,
                                                                     uint32_t index);

/* ------------------------------------------------------------------ in-process inference (BLS)
 *
 * Triton's in-process inference API (spec §6.4: TRITONSERVER_InferenceRequest*, ResponseAllocator*,
 * InferenceResponse*, ServerInferAsync, ServerModelIsReady / Metadata / Config, Load / Unload)
 * is implemented by this library up to the point where a request must reach a model: the
 * embedding host installs hooks that route requests and queries into its own data plane, and
 * answers with WARDEN_InferenceRequestRespond. Each TRITONSERVER_Server handle a backend gets from
 * TRITONBACKEND_ModelServer carries its model's `server_owner` (WARDEN_ModelDesc), which the host
 * uses to decide on whose behalf the backend calls (its principal).
 */

/** One contiguous piece of an input's data (CPU memory, owned by the backend). */
typedef struct WARDEN_Chunk {
  const void* base;
  uint64_t byte_size;
} WARDEN_Chunk;

typedef struct WARDEN_InferInputView {
  const char* name;
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims_count;
  /** The data in order (TRITONSERVER_InferenceRequestAppendInputData*), `byte_size` in all. */
  const WARDEN_Chunk* chunks;
  uint32_t chunk_count;
  uint64_t byte_size;
  /** Added with TRITONSERVER_InferenceRequestAddRawInput: `datatype` and `shape` are not set; the
   *  host deduces them (and the name) from the target's config. */
  bool raw;
} WARDEN_InferInputView;

/** A request as TRITONSERVER_ServerInferAsync hands it to the host; valid during the hook call. */
typedef struct WARDEN_InferRequestView {
  const char* model_name;
  int64_t model_version;
  const char* id;
  uint64_t correlation_id;
  /** Non-NULL when the correlation id is a string (then `correlation_id` is 0). */
  const char* correlation_id_string;
  uint32_t flags;
  uint64_t priority;
  uint64_t timeout_us;
  const WARDEN_InferInputView* inputs;
  uint32_t input_count;
  const char* const* requested_outputs;
  uint32_t requested_output_count;
  const WARDEN_ParamDesc* parameters;
  uint32_t parameter_count;
} WARDEN_InferRequestView;

typedef enum WARDEN_ServerQuery {
  WARDEN_QUERY_MODEL_READY,    /* result "true" / "false" */
  WARDEN_QUERY_MODEL_METADATA, /* result: metadata JSON (spec §1.5) */
  WARDEN_QUERY_MODEL_CONFIG,   /* result: config JSON (spec §1.7) */
  WARDEN_QUERY_LOAD_MODEL,     /* parameters_json: {"config":"...","files":{"file:..":"<base64>"}} */
  WARDEN_QUERY_UNLOAD_MODEL,
  WARDEN_QUERY_UNLOAD_MODEL_AND_DEPENDENTS,
  WARDEN_QUERY_MODEL_TRANSACTION /* result "decoupled" / "one_to_one" (spec §6.4) */
} WARDEN_ServerQuery;

typedef struct WARDEN_ServerHooks {
  /** Queue `request` (identified by `token` from now on) on the data plane for `owner`, or return
   *  the error (the request is then not taken). Called on the backend's thread. */
  TRITONSERVER_Error* (*infer)(void* userp, uint64_t owner, const WARDEN_InferRequestView* request, uint64_t token);
  /** TRITONSERVER_InferenceRequestCancel of an in-flight request. Must not block. */
  void (*cancel)(void* userp, uint64_t token);
  /** A model query or repository action; `*result_json` (malloc'd, freed by the caller) on success. */
  TRITONSERVER_Error* (*query)(void* userp, uint64_t owner, WARDEN_ServerQuery query, const char* model_name,
                               int64_t model_version, const char* parameters_json, char** result_json);
  void* userp;
} WARDEN_ServerHooks;

/** Install the hooks (copied), or NULL to detach: calls then fail with UNAVAILABLE. */
TRITONSERVER_DECLSPEC void WARDEN_SetServerHooks(const WARDEN_ServerHooks* hooks);

typedef struct WARDEN_OutputDesc {
  const char* name;
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims_count;
  const void* data; /* copied before the call returns */
  uint64_t byte_size;
} WARDEN_OutputDesc;

typedef struct WARDEN_InferResponseDesc {
  const char* model_name;
  int64_t model_version;
  /** NULL = success; else the response is this error. */
  const char* error_message;
  TRITONSERVER_Error_Code error_code;
  const WARDEN_OutputDesc* outputs;
  uint32_t output_count;
  const WARDEN_ParamDesc* parameters;
  uint32_t parameter_count;
} WARDEN_InferResponseDesc;

/**
 * A response for in-flight request `token` (NULL `response` = flags-only). Data is copied now;
 * the backend's allocator and response callback run later on the model's callback thread, and
 * after the FINAL one the request's release callback. NOT_FOUND for an unknown token.
 */
TRITONSERVER_DECLSPEC TRITONSERVER_Error* WARDEN_InferenceRequestRespond(uint64_t token,
                                                                         const WARDEN_InferResponseDesc* response,
                                                                         uint32_t flags);

/** In-process requests submitted and not yet FINAL-answered (for statistics and leak reports). */
TRITONSERVER_DECLSPEC uint64_t WARDEN_InflightInferenceRequests(void);

/* ------------------------------------------------------------------ custom metrics */

/** Prometheus text of every metric family backends created (TRITONSERVER_MetricFamilyNew);
 *  free the returned string with free(). */
TRITONSERVER_DECLSPEC char* WARDEN_CustomMetricsText(void);

#ifdef __cplusplus
}
#endif

#endif /* WARDEN_HOST_H */
