// Errors, enum strings, datatypes, parameters, messages, buffer attributes, logging, workers
// (spec §6.4, §6.5).
#include <pthread.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "objects.h"
#include "warden/host.h"

namespace warden {

TRITONSERVER_Error* Err(TRITONSERVER_Error_Code code, std::string message) {
  return new TRITONSERVER_Error{code, std::move(message)};
}

TRITONSERVER_Error* CopyError(const TRITONSERVER_Error* e) {
  return e == nullptr ? nullptr : new TRITONSERVER_Error{e->code, e->message};
}

TRITONSERVER_Error* EscapedException(const std::string& backend, const char* entry) {
  std::string detail;
  try {
    throw;
  } catch (const std::exception& e) {
    detail = e.what();
  } catch (...) {
    detail = "unknown exception type";
  }
  std::string msg = "backend '" + backend + "' threw a C++ exception from " + entry + ": " + detail;
  Log(TRITONSERVER_LOG_ERROR, __FILE__, __LINE__, msg);
  return Internal(msg);
}

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void* AllocCpu(uint64_t byte_size) {
  void* p = nullptr;
  // 64-byte alignment suits SIMD loads; at least one byte so the pointer is never null.
  if (posix_memalign(&p, 64, byte_size == 0 ? 1 : size_t(byte_size)) != 0) return nullptr;
  return p;
}

const void* ParamValue::VValue() const {
  switch (type) {
    case TRITONSERVER_PARAMETER_INT:
      return &int_value;
    case TRITONSERVER_PARAMETER_BOOL:
      return &bool_value;
    case TRITONSERVER_PARAMETER_DOUBLE:
      return &double_value;
    default:
      return string_value.c_str();
  }
}

// ---------------------------------------------------------------- logging

namespace {
std::mutex& log_mu = *new std::mutex;  // never destroyed: logging may happen during exit
WARDEN_LogFn log_fn = nullptr;
void* log_userp = nullptr;
std::atomic<bool> log_enabled[4] = {{true}, {true}, {true}, {false}};

const char* LevelName(TRITONSERVER_LogLevel level) {
  switch (level) {
    case TRITONSERVER_LOG_INFO:
      return "I";
    case TRITONSERVER_LOG_WARN:
      return "W";
    case TRITONSERVER_LOG_ERROR:
      return "E";
    default:
      return "V";
  }
}
}  // namespace

void Log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& msg) {
  if (int(level) < 0 || int(level) > 3 || !log_enabled[level].load()) return;
  std::lock_guard<std::mutex> lk(log_mu);
  if (log_fn != nullptr) {
    log_fn(log_userp, level, file == nullptr ? "" : file, line, msg.c_str());
  } else {
    std::fprintf(stderr, "%s %s:%d] %s\n", LevelName(level), file == nullptr ? "" : file, line, msg.c_str());
  }
}

// ---------------------------------------------------------------- workers

Worker::Worker(const std::string& name) : q_(std::make_shared<Queue>()) {
  thread_ = std::thread(&Worker::Run, q_);
  std::string short_name = name.substr(0, 15);  // pthread limit (16 with NUL)
  pthread_setname_np(thread_.native_handle(), short_name.c_str());
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lk(q_->mu);
    q_->stop = true;
  }
  q_->cv.notify_one();
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // destroyed from one of its own jobs: the thread drains and exits by itself
  } else if (thread_.joinable()) {
    thread_.join();
  }
}

void Worker::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lk(q_->mu);
    q_->jobs.push_back(std::move(job));
    // A sleeping thread with nothing else queued is about to be woken: place it on this CPU when
    // the process is otherwise idle (wake.cc). Under the lock, so the thread cannot wake between
    // the placement and `moved` being recorded.
    if (q_->waiting && !q_->moved && q_->jobs.size() == 1) {
      q_->moved = WARDEN_WakeAffinityPlace(q_->tid.load(std::memory_order_relaxed),
                                           q_->work_ns.load(std::memory_order_relaxed));
    }
  }
  q_->cv.notify_one();
}

void Worker::Run(std::shared_ptr<Queue> q) {
  // A thread inherits its creator's CPU mask: created while the JS thread is pinned beside a
  // thread it placed (wake.cc), it would stay on that one CPU for good.
  WARDEN_WakeAffinityRestore();
  q->tid.store(CurrentThreadId(), std::memory_order_relaxed);
  for (;;) {
    std::function<void()> job;
    bool moved = false;
    {
      std::unique_lock<std::mutex> lk(q->mu);
      q->waiting = true;
      q->cv.wait(lk, [&q] { return q->stop || !q->jobs.empty(); });
      q->waiting = false;
      moved = q->moved;
      q->moved = false;
      if (q->jobs.empty()) {  // stop requested and drained
        if (moved) {          // give the process's CPU mask back before exiting
          WARDEN_WakeAffinityBegin(true);
          WARDEN_WakeAffinityEnd();
        }
        return;
      }
      job = std::move(q->jobs.front());
      q->jobs.pop_front();
    }
    WARDEN_WakeAffinityBegin(moved);
    const uint64_t t0 = NowNs();
    job();
    q->work_ns.store(WARDEN_WakeAffinityAverage(q->work_ns.load(std::memory_order_relaxed), NowNs() - t0),
                     std::memory_order_relaxed);
    WARDEN_WakeAffinityEnd();
  }
}

}  // namespace warden

using warden::Err;

extern "C" {

// ---------------------------------------------------------------- embedding: logging

void WARDEN_SetLogSink(WARDEN_LogFn fn, void* userp, bool info, bool warn, bool error, bool verbose) {
  std::lock_guard<std::mutex> lk(warden::log_mu);
  warden::log_fn = fn;
  warden::log_userp = userp;
  warden::log_enabled[TRITONSERVER_LOG_INFO] = info;
  warden::log_enabled[TRITONSERVER_LOG_WARN] = warn;
  warden::log_enabled[TRITONSERVER_LOG_ERROR] = error;
  warden::log_enabled[TRITONSERVER_LOG_VERBOSE] = verbose;
}

// ---------------------------------------------------------------- version and enum strings

TRITONSERVER_Error* TRITONSERVER_ApiVersion(uint32_t* major, uint32_t* minor) {
  if (major != nullptr) *major = TRITONSERVER_API_VERSION_MAJOR;
  if (minor != nullptr) *minor = TRITONSERVER_API_VERSION_MINOR;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor) {
  if (major != nullptr) *major = TRITONBACKEND_API_VERSION_MAJOR;
  if (minor != nullptr) *minor = TRITONBACKEND_API_VERSION_MINOR;
  return nullptr;
}

static const char* const kDataTypeNames[] = {"<invalid>", "BOOL", "UINT8", "UINT16", "UINT32",
                                             "UINT64",    "INT8", "INT16", "INT32",  "INT64",
                                             "FP16",      "FP32", "FP64",  "BYTES",  "BF16"};
static const uint32_t kDataTypeSizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 0, 2};

const char* TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype) {
  int d = int(datatype);
  return (d > 0 && d <= TRITONSERVER_TYPE_BF16) ? kDataTypeNames[d] : kDataTypeNames[0];
}

TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char* dtype) {
  if (dtype == nullptr) return TRITONSERVER_TYPE_INVALID;
  for (int d = 1; d <= TRITONSERVER_TYPE_BF16; ++d) {
    if (std::strcmp(dtype, kDataTypeNames[d]) == 0) return TRITONSERVER_DataType(d);
  }
  return TRITONSERVER_TYPE_INVALID;
}

uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype) {
  int d = int(datatype);
  return (d > 0 && d <= TRITONSERVER_TYPE_BF16) ? kDataTypeSizes[d] : 0;
}

const char* TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype) {
  switch (memtype) {
    case TRITONSERVER_MEMORY_CPU:
      return "CPU";
    case TRITONSERVER_MEMORY_CPU_PINNED:
      return "CPU_PINNED";
    case TRITONSERVER_MEMORY_GPU:
      return "GPU";
  }
  return "<invalid>";
}

const char* TRITONSERVER_ParameterTypeString(TRITONSERVER_ParameterType paramtype) {
  switch (paramtype) {
    case TRITONSERVER_PARAMETER_STRING:
      return "STRING";
    case TRITONSERVER_PARAMETER_INT:
      return "INT";
    case TRITONSERVER_PARAMETER_BOOL:
      return "BOOL";
    case TRITONSERVER_PARAMETER_DOUBLE:
      return "DOUBLE";
    case TRITONSERVER_PARAMETER_BYTES:
      return "BYTES";
  }
  return "<invalid>";
}

const char* TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO:
      return "AUTO";
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return "CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return "GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return "MODEL";
  }
  return "<invalid>";
}

const char* TRITONSERVER_InferenceTraceLevelString(TRITONSERVER_InferenceTraceLevel level) {
  switch (level) {
    case TRITONSERVER_TRACE_LEVEL_DISABLED:
      return "DISABLED";
    case TRITONSERVER_TRACE_LEVEL_MIN:
      return "MIN";
    case TRITONSERVER_TRACE_LEVEL_MAX:
      return "MAX";
    case TRITONSERVER_TRACE_LEVEL_TIMESTAMPS:
      return "TIMESTAMPS";
    case TRITONSERVER_TRACE_LEVEL_TENSORS:
      return "TENSORS";
  }
  return "<unknown>";
}

const char* TRITONSERVER_InferenceTraceActivityString(TRITONSERVER_InferenceTraceActivity activity) {
  switch (activity) {
    case TRITONSERVER_TRACE_REQUEST_START:
      return "REQUEST_START";
    case TRITONSERVER_TRACE_QUEUE_START:
      return "QUEUE_START";
    case TRITONSERVER_TRACE_COMPUTE_START:
      return "COMPUTE_START";
    case TRITONSERVER_TRACE_COMPUTE_INPUT_END:
      return "COMPUTE_INPUT_END";
    case TRITONSERVER_TRACE_COMPUTE_OUTPUT_START:
      return "COMPUTE_OUTPUT_START";
    case TRITONSERVER_TRACE_COMPUTE_END:
      return "COMPUTE_END";
    case TRITONSERVER_TRACE_REQUEST_END:
      return "REQUEST_END";
    case TRITONSERVER_TRACE_TENSOR_QUEUE_INPUT:
      return "TENSOR_QUEUE_INPUT";
    case TRITONSERVER_TRACE_TENSOR_BACKEND_INPUT:
      return "TENSOR_BACKEND_INPUT";
    case TRITONSERVER_TRACE_TENSOR_BACKEND_OUTPUT:
      return "TENSOR_BACKEND_OUTPUT";
    case TRITONSERVER_TRACE_CUSTOM_ACTIVITY:
      return "CUSTOM_ACTIVITY";
  }
  return "<unknown>";
}

// ---------------------------------------------------------------- errors

TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) {
  return Err(code, msg == nullptr ? "" : msg);
}

void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) { delete error; }

TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) {
  return error == nullptr ? TRITONSERVER_ERROR_UNKNOWN : error->code;
}

const char* TRITONSERVER_ErrorCodeString(TRITONSERVER_Error* error) {
  switch (error == nullptr ? TRITONSERVER_ERROR_UNKNOWN : error->code) {
    case TRITONSERVER_ERROR_UNKNOWN:
      return "Unknown";
    case TRITONSERVER_ERROR_INTERNAL:
      return "Internal";
    case TRITONSERVER_ERROR_NOT_FOUND:
      return "Not found";
    case TRITONSERVER_ERROR_INVALID_ARG:
      return "Invalid argument";
    case TRITONSERVER_ERROR_UNAVAILABLE:
      return "Unavailable";
    case TRITONSERVER_ERROR_UNSUPPORTED:
      return "Unsupported";
    case TRITONSERVER_ERROR_ALREADY_EXISTS:
      return "Already exists";
    case TRITONSERVER_ERROR_CANCELLED:
      return "Cancelled";
  }
  return "<invalid code>";
}

const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) {
  return error == nullptr ? "" : error->message.c_str();
}

// ---------------------------------------------------------------- logging

bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) {
  return int(level) >= 0 && int(level) <= 3 && warden::log_enabled[level].load();
}

TRITONSERVER_Error* TRITONSERVER_LogMessage(TRITONSERVER_LogLevel level, const char* filename, const int line,
                                            const char* msg) {
  warden::Log(level, filename, line, msg == nullptr ? "" : msg);
  return nullptr;
}

// ---------------------------------------------------------------- parameters

TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(const char* name, const TRITONSERVER_ParameterType type,
                                                  const void* value) {
  if (name == nullptr || value == nullptr) return nullptr;
  auto* p = new TRITONSERVER_Parameter;
  p->name = name;
  p->type = type;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING:
      p->string_value = static_cast<const char*>(value);
      break;
    case TRITONSERVER_PARAMETER_INT:
      p->int_value = *static_cast<const int64_t*>(value);
      break;
    case TRITONSERVER_PARAMETER_BOOL:
      p->bool_value = *static_cast<const bool*>(value);
      break;
    case TRITONSERVER_PARAMETER_DOUBLE:
      p->double_value = *static_cast<const double*>(value);
      break;
    default:  // BYTES must use TRITONSERVER_ParameterBytesNew
      delete p;
      return nullptr;
  }
  return p;
}

TRITONSERVER_Parameter* TRITONSERVER_ParameterBytesNew(const char* name, const void* byte_ptr, const uint64_t size) {
  if (name == nullptr) return nullptr;
  auto* p = new TRITONSERVER_Parameter;
  p->name = name;
  p->type = TRITONSERVER_PARAMETER_BYTES;
  p->bytes = byte_ptr;
  p->bytes_size = size;
  return p;
}

void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter* parameter) { delete parameter; }

// ---------------------------------------------------------------- messages

TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(TRITONSERVER_Message** message, const char* base,
                                                              size_t byte_size) {
  if (message == nullptr || (base == nullptr && byte_size > 0)) {
    return warden::InvalidArg("TRITONSERVER_MessageNewFromSerializedJson: null argument");
  }
  *message = new TRITONSERVER_Message{std::string(base == nullptr ? "" : base, byte_size)};
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message) {
  delete message;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(TRITONSERVER_Message* message, const char** base,
                                                        size_t* byte_size) {
  if (message == nullptr) return warden::InvalidArg("TRITONSERVER_MessageSerializeToJson: null message");
  if (base != nullptr) *base = message->json.c_str();
  if (byte_size != nullptr) *byte_size = message->json.size();
  return nullptr;
}

// ---------------------------------------------------------------- buffer attributes

TRITONSERVER_Error* TRITONSERVER_BufferAttributesNew(TRITONSERVER_BufferAttributes** attrs) {
  if (attrs == nullptr) return warden::InvalidArg("buffer_attributes is null");
  *attrs = new TRITONSERVER_BufferAttributes;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_BufferAttributesDelete(TRITONSERVER_BufferAttributes* attrs) {
  delete attrs;
  return nullptr;
}

#define WARDEN_ATTR_SETTER(fn, field, type)                                   \
  TRITONSERVER_Error* fn(TRITONSERVER_BufferAttributes* attrs, type value) {  \
    if (attrs == nullptr) return warden::InvalidArg(#fn ": null attributes"); \
    attrs->field = value;                                                     \
    return nullptr;                                                           \
  }
#define WARDEN_ATTR_GETTER(fn, field, type)                                                     \
  TRITONSERVER_Error* fn(TRITONSERVER_BufferAttributes* attrs, type* value) {                   \
    if (attrs == nullptr || value == nullptr) return warden::InvalidArg(#fn ": null argument"); \
    *value = attrs->field;                                                                      \
    return nullptr;                                                                             \
  }

WARDEN_ATTR_SETTER(TRITONSERVER_BufferAttributesSetMemoryTypeId, memory_type_id, int64_t)
WARDEN_ATTR_SETTER(TRITONSERVER_BufferAttributesSetMemoryType, memory_type, TRITONSERVER_MemoryType)
WARDEN_ATTR_SETTER(TRITONSERVER_BufferAttributesSetCudaIpcHandle, cuda_ipc_handle, void*)
WARDEN_ATTR_SETTER(TRITONSERVER_BufferAttributesSetByteSize, byte_size, size_t)
WARDEN_ATTR_GETTER(TRITONSERVER_BufferAttributesMemoryTypeId, memory_type_id, int64_t)
WARDEN_ATTR_GETTER(TRITONSERVER_BufferAttributesMemoryType, memory_type, TRITONSERVER_MemoryType)
WARDEN_ATTR_GETTER(TRITONSERVER_BufferAttributesCudaIpcHandle, cuda_ipc_handle, void*)
WARDEN_ATTR_GETTER(TRITONSERVER_BufferAttributesByteSize, byte_size, size_t)

}  // extern "C"
