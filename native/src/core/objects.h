// Internal definitions of the opaque Triton API objects Warden's libtritonserver.so hands out.
// The structs are defined at global scope with the names the C API declares, so the pointers the
// API passes around are these objects directly (no casts). Spec §6.3–§6.6.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "warden/host.h"

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

struct TRITONSERVER_Message {
  std::string json;
};

struct TRITONSERVER_Parameter {
  std::string name;
  TRITONSERVER_ParameterType type = TRITONSERVER_PARAMETER_STRING;
  std::string string_value;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
  const void* bytes = nullptr;  // BYTES: borrowed
  uint64_t bytes_size = 0;
};

struct TRITONSERVER_BufferAttributes {
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  int64_t memory_type_id = 0;
  size_t byte_size = 0;
  void* cuda_ipc_handle = nullptr;
};

namespace warden {
class Worker;
/** What a model's TRITONSERVER_Server shares with its in-flight in-process requests. */
struct ServerState {
  uint64_t owner = 0;  // WARDEN_ModelDesc.server_owner
  std::string model_name;
  std::mutex mu;
  std::shared_ptr<Worker> callbacks;  // allocator / response / release callbacks run here
  /** The callback thread, started on first use. */
  std::shared_ptr<Worker> CallbackWorker();
};
}  // namespace warden

// The handle TRITONBACKEND_ModelServer returns: one per model, so the embedding host knows on
// whose behalf a backend's in-process call runs (inference.cc, spec §6.4).
struct TRITONSERVER_Server {
  std::shared_ptr<warden::ServerState> state = std::make_shared<warden::ServerState>();
};

struct TRITONSERVER_ResponseAllocator {
  TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn = nullptr;
  TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn = nullptr;
  TRITONSERVER_ResponseAllocatorStartFn_t start_fn = nullptr;
  TRITONSERVER_ResponseAllocatorQueryFn_t query_fn = nullptr;
  TRITONSERVER_ResponseAllocatorBufferAttributesFn_t buffer_attributes_fn = nullptr;
};

namespace warden {

// ---------------------------------------------------------------- errors and logging

TRITONSERVER_Error* Err(TRITONSERVER_Error_Code code, std::string message);
inline TRITONSERVER_Error* InvalidArg(std::string m) { return Err(TRITONSERVER_ERROR_INVALID_ARG, std::move(m)); }
inline TRITONSERVER_Error* Unsupported(std::string m) { return Err(TRITONSERVER_ERROR_UNSUPPORTED, std::move(m)); }
inline TRITONSERVER_Error* Internal(std::string m) { return Err(TRITONSERVER_ERROR_INTERNAL, std::move(m)); }
TRITONSERVER_Error* CopyError(const TRITONSERVER_Error* e);
/**
 * Call only inside a catch block: the INTERNAL error for an exception that escaped backend entry
 * point `entry` of backend `backend`, "backend '<b>' threw a C++ exception from <entry>: <what()>",
 * also logged at ERROR (a non-std exception reports "unknown exception type").
 */
TRITONSERVER_Error* EscapedException(const std::string& backend, const char* entry);
void Log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& msg);
/** Argument check for API entry points: INVALID_ARG "<fn>: null argument". */
#define WARDEN_REQUIRE(cond, fn) \
  if (!(cond)) return ::warden::InvalidArg(std::string(fn) + ": null argument")
#define WARDEN_LOG(level, msg) ::warden::Log(level, __FILE__, __LINE__, (msg))

/** CLOCK_MONOTONIC in ns (the clock backend utils' steady_clock timestamps use). */
uint64_t NowNs();
/** The calling thread's kernel id (gettid). */
int CurrentThreadId();

// ---------------------------------------------------------------- parameters

struct ParamValue {
  std::string key;
  TRITONSERVER_ParameterType type = TRITONSERVER_PARAMETER_STRING;
  std::string string_value;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
  /** The `vvalue` the API returns: const char* for STRING, else a pointer to the scalar. */
  const void* VValue() const;

  /** A typed value (key left empty), for the Set*Parameter entry points. */
  static ParamValue String(const char* v) {
    ParamValue p;
    p.type = TRITONSERVER_PARAMETER_STRING;
    p.string_value = v;
    return p;
  }
  static ParamValue Int(int64_t v) {
    ParamValue p;
    p.type = TRITONSERVER_PARAMETER_INT;
    p.int_value = v;
    return p;
  }
  static ParamValue Bool(bool v) {
    ParamValue p;
    p.type = TRITONSERVER_PARAMETER_BOOL;
    p.bool_value = v;
    return p;
  }
  static ParamValue Double(double v) {
    ParamValue p;
    p.type = TRITONSERVER_PARAMETER_DOUBLE;
    p.double_value = v;
    return p;
  }
};

// ---------------------------------------------------------------- worker threads

/** A native thread running queued jobs in order. Destroying it drains the queue and joins. */
class Worker {
 public:
  explicit Worker(const std::string& name);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  void Post(std::function<void()> job);

 private:
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> jobs;
    bool stop = false;
    /** The thread's kernel id, set when it starts (0 before). */
    std::atomic<int> tid{0};
    /** Guarded by mu: the thread sleeps in cv.wait with an empty queue. */
    bool waiting = false;
    /** Guarded by mu: Post moved the sleeping thread onto the poster's CPU (wake.cc). */
    bool moved = false;
    /** Moving average of the thread's job durations, ns (WARDEN_WakeAffinityAverage). */
    std::atomic<uint64_t> work_ns{0};
  };
  static void Run(std::shared_ptr<Queue> q);
  // Shared with the thread so a Worker destroyed from one of its own jobs (detached) stays safe.
  std::shared_ptr<Queue> q_;
  std::thread thread_;
};

// ---------------------------------------------------------------- model facts shared with responses

/** What responses need to know about their model; immutable, shared with in-flight sinks so a
 *  late decoupled response never touches a freed model. */
/** Backend objects of one model that are alive (created and not yet given back): what is left
 *  when the model unloads was leaked by the backend. */
struct LiveObjects {
  std::atomic<int64_t> responses{0};  // TRITONBACKEND_Response not sent or deleted
  std::atomic<int64_t> factories{0};  // TRITONBACKEND_ResponseFactory not deleted
};

struct ModelInfo {
  std::string backend_name;
  std::string name;
  int64_t version = 0;
  std::unordered_set<std::string> outputs;
  bool decoupled = false;
  /** Shared by every ModelInfo of the model (a config update makes a new ModelInfo). */
  std::shared_ptr<LiveObjects> live = std::make_shared<LiveObjects>();
};

/**
 * Where the responses of one request go. Shared by the request (until released), its response
 * factories and its unsent responses. Guarantees exactly one FINAL delivery: if the last holder
 * goes away without one, an INTERNAL error response with FINAL is delivered.
 */
class Sink {
 public:
  Sink(std::shared_ptr<const ModelInfo> model, std::string request_id, WARDEN_ResponseFn fn, void* userp,
       bool cancelled);
  ~Sink();
  /** Deliver `response` (may be null with FINAL). Error (and `response` deleted) after FINAL. */
  TRITONSERVER_Error* Deliver(TRITONSERVER_InferenceResponse* response, uint32_t flags);
  /** Deliver an error response (copied) with FINAL unless FINAL was already sent. */
  void DeliverErrorIfOpen(const TRITONSERVER_Error* error);
  /** The request was released with RESCHEDULE: when the last holder goes away without a FINAL,
   *  WARDEN_RESPONSE_CLOSED is delivered instead of an error (the host runs the request again). */
  void MarkRescheduled();
  const std::shared_ptr<const ModelInfo>& model() const { return model_; }
  const std::string& request_id() const { return request_id_; }
  /** Keep an implicit state (TRITONBACKEND_StateUpdate, state.cc) for the next delivery, replacing
   *  a staged state of the same name. INVALID_ARG once FINAL was delivered. */
  TRITONSERVER_Error* StageState(std::unique_ptr<TRITONBACKEND_Output> state);
  std::atomic<bool> cancelled;

 private:
  /** Under mu_: move staged states into `response` (created for a flags-only FINAL). state.cc. */
  void MergeStagedStates(TRITONSERVER_InferenceResponse*& response, uint32_t flags);
  std::shared_ptr<const ModelInfo> model_;
  std::string request_id_;
  WARDEN_ResponseFn fn_;
  void* userp_;
  std::mutex mu_;
  bool final_sent_ = false;
  bool rescheduled_ = false;
  std::vector<std::unique_ptr<TRITONBACKEND_Output>> staged_states_;
};

/** Registry of requests the host has handed out and not yet taken back: detects double release
 *  and lets the host reclaim requests when Execute fails. Values are per-request serial numbers;
 *  RegistryTake with a non-null `serial` only takes the entry if it still has that serial. */
bool RegistryTake(TRITONBACKEND_Request* request, const uint64_t* serial);
void RegistryAdd(TRITONBACKEND_Request* request, uint64_t serial);
uint64_t NextSerial();
/** Give a request back: release callback, then free. */
void ReleaseRequest(TRITONBACKEND_Request* request);

void* AllocCpu(uint64_t byte_size);

/** Once per process: children forked from now on (a backend's helper processes) get fds 0-2
 *  inheritable and blocking, as under Triton's server (stdio.cc). */
void InstallStdioForChildren();

}  // namespace warden

// ---------------------------------------------------------------- backend objects

struct TRITONBACKEND_MemoryManager {
  TRITONBACKEND_Backend* backend = nullptr;
};

struct TRITONBACKEND_BackendAttribute {
  struct Group {
    TRITONSERVER_InstanceGroupKind kind;
    uint64_t count;
    std::vector<uint64_t> device_ids;
  };
  std::vector<Group> preferred_groups;
  bool parallel_instance_loading = false;
};

struct TRITONBACKEND_Backend {
  using BackendFn = TRITONSERVER_Error* (*)(TRITONBACKEND_Backend*);
  using AttributeFn = TRITONSERVER_Error* (*)(TRITONBACKEND_Backend*, TRITONBACKEND_BackendAttribute*);
  using ModelFn = TRITONSERVER_Error* (*)(TRITONBACKEND_Model*);
  using InstanceFn = TRITONSERVER_Error* (*)(TRITONBACKEND_ModelInstance*);
  using ExecuteFn = TRITONSERVER_Error* (*)(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request**, const uint32_t);

  std::string name;
  std::string library_path;
  std::string artifacts_dir;
  TRITONSERVER_Message config;
  void* dl = nullptr;
  std::atomic<void*> state{nullptr};
  std::atomic<int> execution_policy{TRITONBACKEND_EXECUTION_BLOCKING};
  TRITONBACKEND_MemoryManager memory_manager;

  BackendFn initialize = nullptr;
  BackendFn finalize = nullptr;
  AttributeFn get_attribute = nullptr;
  ModelFn model_initialize = nullptr;
  ModelFn model_finalize = nullptr;
  InstanceFn instance_initialize = nullptr;
  InstanceFn instance_finalize = nullptr;
  InstanceFn instance_ready = nullptr;
  ExecuteFn instance_execute = nullptr;

  TRITONBACKEND_BackendAttribute attributes;
  std::string preferred_groups_json = "[]";
  std::atomic<int> live_models{0};

  /** TRITONBACKEND_EXECUTION_DEVICE_BLOCKING: one worker per (kind, device), shared by instances. */
  std::mutex workers_mu;
  std::map<std::pair<int, int>, std::weak_ptr<warden::Worker>> device_workers;
};

struct TRITONBACKEND_Model {
  TRITONBACKEND_Backend* backend = nullptr;
  TRITONSERVER_Server server;
  std::string name;
  uint64_t version = 0;
  std::string repository_path;
  bool auto_complete_config = true;
  std::atomic<void*> state{nullptr};
  std::atomic<bool> in_initialize{false};
  std::atomic<int> live_instances{0};

  std::shared_ptr<warden::LiveObjects> live = std::make_shared<warden::LiveObjects>();
  std::mutex mu;  // guards the fields below
  std::string config_json;
  std::shared_ptr<const warden::ModelInfo> info;
  bool has_set_config = false;
  std::string set_config_json;
};

struct TRITONBACKEND_ModelInstance {
  TRITONBACKEND_Model* model = nullptr;
  std::string name;
  TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  int32_t device_id = 0;
  TRITONSERVER_Message host_policy;
  bool passive = false;
  std::vector<std::string> profiles;
  std::vector<std::pair<std::string, int64_t>> secondary_devices;
  std::atomic<void*> state{nullptr};
  bool initialized = false;  // worker thread only
  std::shared_ptr<warden::Worker> worker;

  std::mutex stats_mu;
  WARDEN_ExecStats exec_stats{};
};

// ---------------------------------------------------------------- requests

struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  uint64_t byte_size = 0;
  std::unique_ptr<TRITONSERVER_BufferAttributes> attributes;  // created on demand
};

struct TRITONBACKEND_Request {
  uint64_t serial = 0;
  TRITONBACKEND_ModelInstance* instance = nullptr;
  std::string id;
  bool correlation_is_string = false;
  uint64_t correlation_id = 0;
  std::string correlation_id_string;
  uint32_t flags = 0;
  uint64_t timeout_us = 0;
  uint64_t priority = 0;
  std::vector<TRITONBACKEND_Input> inputs;
  std::vector<std::string> requested_outputs;
  std::vector<warden::ParamValue> parameters;
  std::shared_ptr<warden::Sink> sink;
  WARDEN_ReleaseFn release_fn = nullptr;
  void* userp = nullptr;
  /** WARDEN_RequestDesc.reschedulable. */
  bool reschedulable = false;
  WARDEN_RequestStats stats{};
  /** Implicit states created on this request (TRITONBACKEND_StateNew, state.cc); freed with it. */
  std::vector<std::shared_ptr<TRITONBACKEND_State>> states;
};

// ---------------------------------------------------------------- responses

struct TRITONBACKEND_Output {
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  void* buffer = nullptr;  // malloc'd (freed with the output unless taken), or from `allocator`
  uint64_t byte_size = 0;
  bool allocated = false;
  /** Set for outputs of in-process responses: the buffer came from this allocator's alloc_fn and
   *  goes back through its release_fn. */
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  void* buffer_userp = nullptr;
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  int64_t memory_type_id = 0;
  std::unique_ptr<TRITONSERVER_BufferAttributes> attributes;
  ~TRITONBACKEND_Output();
};

struct TRITONBACKEND_Response {
  std::shared_ptr<warden::Sink> sink;
  std::vector<std::unique_ptr<TRITONBACKEND_Output>> outputs;
  std::vector<warden::ParamValue> parameters;
};

struct TRITONBACKEND_ResponseFactory {
  std::shared_ptr<warden::Sink> sink;
};

struct TRITONSERVER_InferenceResponse {
  std::shared_ptr<const warden::ModelInfo> model;
  std::string request_id;
  TRITONSERVER_Error* error = nullptr;  // owned
  std::vector<std::unique_ptr<TRITONBACKEND_Output>> outputs;
  std::vector<warden::ParamValue> parameters;
  ~TRITONSERVER_InferenceResponse() { delete error; }
};

struct TRITONBACKEND_ModelInstanceResponseStatistics {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  uint64_t response_start = 0, compute_output_start = 0, response_end = 0;
  bool has_error = false;
};
