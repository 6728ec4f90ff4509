// Triton's in-process inference API for backends (spec §6.4): TRITONSERVER_ResponseAllocator*,
// TRITONSERVER_InferenceRequest*, TRITONSERVER_ServerInferAsync and the server's model queries
// and repository actions. Requests and queries go to the embedding host through
// WARDEN_ServerHooks (the Node addon routes them into Warden's data plane); responses come back
// through WARDEN_InferenceRequestRespond and reach the backend's allocator and callbacks on the
// calling model's callback thread, never on the host's (JS) thread.
#include <cstring>
#include <unordered_map>

#include "objects.h"

struct TRITONSERVER_InferenceRequest {
  struct Input {
    std::string name;
    TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
    std::vector<int64_t> shape;
    std::vector<WARDEN_Chunk> chunks;
    uint64_t byte_size = 0;
    /** TRITONSERVER_InferenceRequestAddRawInput: datatype, shape and name come from the target's config. */
    bool raw = false;
  };
  std::shared_ptr<warden::ServerState> server;
  std::string model_name;
  int64_t model_version = -1;
  std::string id;
  uint64_t correlation_id = 0;
  std::string correlation_id_string;
  bool correlation_is_string = false;
  uint32_t flags = 0;
  uint64_t priority = 0;
  uint64_t timeout_us = 0;
  std::vector<Input> inputs;
  std::vector<std::string> requested_outputs;
  std::vector<warden::ParamValue> parameters;
  TRITONSERVER_InferenceRequestReleaseFn_t release_fn = nullptr;
  void* release_userp = nullptr;
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  void* allocator_userp = nullptr;
  TRITONSERVER_InferenceResponseCompleteFn_t response_fn = nullptr;
  void* response_userp = nullptr;
  std::atomic<bool> cancelled{false};
  std::atomic<uint64_t> token{0};  // non-zero while in flight
};

namespace {

using Request = TRITONSERVER_InferenceRequest;

// Never destroyed: backends may respond while the process exits.
std::mutex& hooks_mu = *new std::mutex;
WARDEN_ServerHooks hooks{};
bool hooks_set = false;

std::mutex& inflight_mu = *new std::mutex;
std::unordered_map<uint64_t, Request*>& inflight = *new std::unordered_map<uint64_t, Request*>;
uint64_t next_token = 1;

bool Hooks(WARDEN_ServerHooks* out) {
  std::lock_guard<std::mutex> lk(hooks_mu);
  if (!hooks_set) return false;
  *out = hooks;
  return true;
}

TRITONSERVER_Error* NoServer() {
  return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE,
                     "in-process inference is not available: no server is attached to Warden's "
                     "native backend host");
}

Request::Input* FindInput(Request* r, const char* name) {
  for (auto& in : r->inputs) {
    if (in.name == name) return &in;
  }
  return nullptr;
}

TRITONSERVER_Error* SetParam(Request* r, const char* key, warden::ParamValue v, const char* fn) {
  WARDEN_REQUIRE(r && key, fn);
  v.key = key;
  r->parameters.push_back(std::move(v));
  return nullptr;
}

TRITONSERVER_Error* NotInFlight(Request* r, const char* fn) {
  if (r->token.load() != 0) {
    return warden::InvalidArg(std::string(fn) + ": the request is in flight (wait for its release callback)");
  }
  return nullptr;
}

/** A response staged on the host's thread, delivered on the model's callback thread. */
struct Staged {
  bool has_response = false;
  std::string model_name;
  int64_t model_version = 0;
  bool is_error = false;
  TRITONSERVER_Error_Code error_code = TRITONSERVER_ERROR_INTERNAL;
  std::string error_message;
  struct Output {
    std::string name;
    TRITONSERVER_DataType datatype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<Output> outputs;
  std::vector<warden::ParamValue> parameters;
};

/** Allocate `o` through the request's allocator and copy the data in. */
TRITONSERVER_Error* AllocateOutput(Request* req, Staged::Output& o, TRITONBACKEND_Output* out) {
  TRITONSERVER_ResponseAllocator* a = req->allocator;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  if (a->query_fn != nullptr) {
    size_t size = o.data.size();
    TRITONSERVER_Error* e = a->query_fn(a, req->allocator_userp, o.name.c_str(), &size, &mt, &mt_id);
    if (e != nullptr) return e;
    if (mt == TRITONSERVER_MEMORY_GPU) mt = TRITONSERVER_MEMORY_CPU;  // this host has CPU memory only
  }
  void* buffer = nullptr;
  void* buffer_userp = nullptr;
  TRITONSERVER_MemoryType actual = TRITONSERVER_MEMORY_CPU;
  int64_t actual_id = 0;
  TRITONSERVER_Error* e = a->alloc_fn(a, o.name.c_str(), o.data.size(), mt, mt_id, req->allocator_userp, &buffer,
                                      &buffer_userp, &actual, &actual_id);
  if (e != nullptr) return e;
  out->allocator = a;
  out->buffer = buffer;
  out->buffer_userp = buffer_userp;
  out->byte_size = o.data.size();
  out->memory_type = actual;
  out->memory_type_id = actual_id;
  out->allocated = true;
  if (!o.data.empty()) {
    if (buffer == nullptr) {
      return warden::Internal("response allocator returned no buffer for output '" + o.name + "' of " +
                              std::to_string(o.data.size()) + " bytes");
    }
    if (actual == TRITONSERVER_MEMORY_GPU) {
      return warden::Unsupported("response allocator returned GPU memory for output '" + o.name +
                                 "'; Warden's native backend host has no CUDA support");
    }
    std::memcpy(buffer, o.data.data(), o.data.size());
  }
  if (a->buffer_attributes_fn != nullptr) {
    TRITONSERVER_BufferAttributes attrs;
    attrs.memory_type = actual;
    attrs.memory_type_id = actual_id;
    attrs.byte_size = o.data.size();
    e = a->buffer_attributes_fn(a, o.name.c_str(), &attrs, req->allocator_userp, buffer_userp);
    if (e != nullptr) return e;
  }
  return nullptr;
}

/** On the callback thread: allocator, response callback, and after FINAL the release callback. */
void Deliver(Request* req, Staged& st, uint32_t flags) {
  TRITONSERVER_InferenceResponse* response = nullptr;
  if (st.has_response) {
    response = new TRITONSERVER_InferenceResponse;
    auto info = std::make_shared<warden::ModelInfo>();
    info->name = st.model_name;
    info->version = st.model_version;
    response->model = std::move(info);
    response->request_id = req->id;
    if (st.is_error) {
      response->error = warden::Err(st.error_code, st.error_message);
    } else {
      TRITONSERVER_Error* err = nullptr;
      if (!st.outputs.empty() && req->allocator->start_fn != nullptr) {
        err = req->allocator->start_fn(req->allocator, req->allocator_userp);
      }
      for (auto& o : st.outputs) {
        if (err != nullptr) break;
        auto out = std::make_unique<TRITONBACKEND_Output>();
        out->name = o.name;
        out->datatype = o.datatype;
        out->shape = o.shape;
        err = AllocateOutput(req, o, out.get());
        response->outputs.push_back(std::move(out));  // released with the response, even on error
      }
      if (err != nullptr) {
        response->outputs.clear();
        response->error = err;
      } else {
        response->parameters = std::move(st.parameters);
      }
    }
  }
  bool final = (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0;
  req->response_fn(response, flags, req->response_userp);  // the backend owns `response` now
  if (final) {
    req->token = 0;
    if (req->release_fn != nullptr) {
      req->release_fn(req, TRITONSERVER_REQUEST_RELEASE_ALL, req->release_userp);
    }
  }
}

TRITONSERVER_Error* Query(TRITONSERVER_Server* server, WARDEN_ServerQuery q, const char* model, int64_t version,
                          const char* params_json, std::string* result, const char* fn) {
  WARDEN_REQUIRE(server && model, fn);
  WARDEN_ServerHooks h;
  if (!Hooks(&h)) return NoServer();
  char* out = nullptr;
  TRITONSERVER_Error* err = h.query(h.userp, server->state->owner, q, model, version, params_json, &out);
  if (err == nullptr && result != nullptr) *result = out == nullptr ? "" : out;
  std::free(out);
  return err;
}

const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64(const uint8_t* p, uint64_t n) {
  std::string out;
  out.reserve(size_t((n + 2) / 3 * 4));
  for (uint64_t i = 0; i < n; i += 3) {
    uint32_t v = uint32_t(p[i]) << 16;
    if (i + 1 < n) v |= uint32_t(p[i + 1]) << 8;
    if (i + 2 < n) v |= uint32_t(p[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < n ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kBase64[v & 63] : '=';
  }
  return out;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  return out + "\"";
}

}  // namespace

namespace warden {

std::shared_ptr<Worker> ServerState::CallbackWorker() {
  std::lock_guard<std::mutex> lk(mu);
  if (!callbacks) callbacks = std::make_shared<Worker>("cb:" + model_name);
  return callbacks;
}

}  // namespace warden

extern "C" {

// ---------------------------------------------------------------- embedding

void WARDEN_SetServerHooks(const WARDEN_ServerHooks* h) {
  std::lock_guard<std::mutex> lk(hooks_mu);
  hooks_set = h != nullptr && h->infer != nullptr && h->cancel != nullptr && h->query != nullptr;
  hooks = hooks_set ? *h : WARDEN_ServerHooks{};
}

uint64_t WARDEN_InflightInferenceRequests(void) {
  std::lock_guard<std::mutex> lk(inflight_mu);
  return inflight.size();
}

TRITONSERVER_Error* WARDEN_InferenceRequestRespond(uint64_t token, const WARDEN_InferResponseDesc* response,
                                                   uint32_t flags) {
  bool final = (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0;
  if (response == nullptr && !final) return nullptr;  // nothing to deliver
  if (response != nullptr && ((response->outputs == nullptr && response->output_count > 0) ||
                              (response->parameters == nullptr && response->parameter_count > 0))) {
    return warden::InvalidArg("WARDEN_InferenceRequestRespond: null field");
  }
  auto st = std::make_shared<Staged>();
  if (response != nullptr) {
    st->has_response = true;
    st->model_name = response->model_name == nullptr ? "" : response->model_name;
    st->model_version = response->model_version;
    if (response->error_message != nullptr) {
      st->is_error = true;
      st->error_code = response->error_code;
      st->error_message = response->error_message;
    } else {
      st->outputs.resize(response->output_count);
      for (uint32_t i = 0; i < response->output_count; ++i) {
        const WARDEN_OutputDesc& d = response->outputs[i];
        if (d.name == nullptr || (d.shape == nullptr && d.dims_count > 0) || (d.data == nullptr && d.byte_size > 0)) {
          return warden::InvalidArg("WARDEN_InferenceRequestRespond: output with a null field");
        }
        Staged::Output& o = st->outputs[i];
        o.name = d.name;
        o.datatype = d.datatype;
        o.shape.assign(d.shape, d.shape + d.dims_count);
        const uint8_t* p = static_cast<const uint8_t*>(d.data);
        o.data.assign(p, p + d.byte_size);
      }
      for (uint32_t i = 0; i < response->parameter_count; ++i) {
        const WARDEN_ParamDesc& p = response->parameters[i];
        if (p.key == nullptr) continue;
        warden::ParamValue v;
        v.key = p.key;
        v.type = p.type;
        if (p.type == TRITONSERVER_PARAMETER_STRING) v.string_value = p.string_value ? p.string_value : "";
        v.int_value = p.int_value;
        v.bool_value = p.bool_value;
        v.double_value = p.double_value;
        st->parameters.push_back(std::move(v));
      }
    }
  }
  Request* req = nullptr;
  {
    std::lock_guard<std::mutex> lk(inflight_mu);
    auto it = inflight.find(token);
    if (it == inflight.end()) {
      return warden::Err(TRITONSERVER_ERROR_NOT_FOUND, "no in-flight inference request " + std::to_string(token));
    }
    req = it->second;
    if (final) inflight.erase(it);  // later responses for this token are refused
  }
  std::shared_ptr<warden::Worker> w = req->server->CallbackWorker();
  w->Post([req, st, flags] { Deliver(req, *st, flags); });
  return nullptr;
}

// ---------------------------------------------------------------- response allocator

TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorNew(TRITONSERVER_ResponseAllocator** allocator,
                                                      TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn,
                                                      TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn,
                                                      TRITONSERVER_ResponseAllocatorStartFn_t start_fn) {
  WARDEN_REQUIRE(allocator && alloc_fn && release_fn, "TRITONSERVER_ResponseAllocatorNew");
  auto* a = new TRITONSERVER_ResponseAllocator;
  a->alloc_fn = alloc_fn;
  a->release_fn = release_fn;
  a->start_fn = start_fn;
  *allocator = a;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(
    TRITONSERVER_ResponseAllocator* allocator,
    TRITONSERVER_ResponseAllocatorBufferAttributesFn_t buffer_attributes_fn) {
  WARDEN_REQUIRE(allocator, "TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction");
  allocator->buffer_attributes_fn = buffer_attributes_fn;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetQueryFunction(TRITONSERVER_ResponseAllocator* allocator,
                                                                   TRITONSERVER_ResponseAllocatorQueryFn_t query_fn) {
  WARDEN_REQUIRE(allocator, "TRITONSERVER_ResponseAllocatorSetQueryFunction");
  allocator->query_fn = query_fn;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorDelete(TRITONSERVER_ResponseAllocator* allocator) {
  delete allocator;
  return nullptr;
}

// ---------------------------------------------------------------- inference requests

TRITONSERVER_Error* TRITONSERVER_InferenceRequestNew(TRITONSERVER_InferenceRequest** inference_request,
                                                     TRITONSERVER_Server* server, const char* model_name,
                                                     const int64_t model_version) {
  WARDEN_REQUIRE(inference_request && server && model_name, "TRITONSERVER_InferenceRequestNew");
  auto* r = new Request;
  r->server = server->state;
  r->model_name = model_name;
  r->model_version = model_version;
  *inference_request = r;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestDelete(TRITONSERVER_InferenceRequest* r) {
  if (r == nullptr) return nullptr;
  if (TRITONSERVER_Error* e = NotInFlight(r, "TRITONSERVER_InferenceRequestDelete")) return e;
  delete r;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestId(TRITONSERVER_InferenceRequest* r, const char** id) {
  WARDEN_REQUIRE(r && id, "TRITONSERVER_InferenceRequestId");
  *id = r->id.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetId(TRITONSERVER_InferenceRequest* r, const char* id) {
  WARDEN_REQUIRE(r && id, "TRITONSERVER_InferenceRequestSetId");
  r->id = id;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestFlags(TRITONSERVER_InferenceRequest* r, uint32_t* flags) {
  WARDEN_REQUIRE(r && flags, "TRITONSERVER_InferenceRequestFlags");
  *flags = r->flags;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetFlags(TRITONSERVER_InferenceRequest* r, uint32_t flags) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetFlags");
  r->flags = flags;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationId(TRITONSERVER_InferenceRequest* r,
                                                               uint64_t* correlation_id) {
  WARDEN_REQUIRE(r && correlation_id, "TRITONSERVER_InferenceRequestCorrelationId");
  if (r->correlation_is_string) {
    return warden::InvalidArg("given request's correlation id is not an unsigned int");
  }
  *correlation_id = r->correlation_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationIdString(TRITONSERVER_InferenceRequest* r,
                                                                     const char** correlation_id) {
  WARDEN_REQUIRE(r && correlation_id, "TRITONSERVER_InferenceRequestCorrelationIdString");
  if (!r->correlation_is_string) return warden::InvalidArg("given request's correlation id is not a string");
  *correlation_id = r->correlation_id_string.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationId(TRITONSERVER_InferenceRequest* r,
                                                                  uint64_t correlation_id) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetCorrelationId");
  r->correlation_is_string = false;
  r->correlation_id = correlation_id;
  r->correlation_id_string.clear();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationIdString(TRITONSERVER_InferenceRequest* r,
                                                                        const char* correlation_id) {
  WARDEN_REQUIRE(r && correlation_id, "TRITONSERVER_InferenceRequestSetCorrelationIdString");
  if (std::strlen(correlation_id) > 128) {
    return warden::InvalidArg("string correlation ID cannot be longer than 128 characters");
  }
  r->correlation_is_string = true;
  r->correlation_id = 0;
  r->correlation_id_string = correlation_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestCancel(TRITONSERVER_InferenceRequest* r) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestCancel");
  r->cancelled = true;
  uint64_t token = r->token.load();
  WARDEN_ServerHooks h;
  if (token != 0 && Hooks(&h)) h.cancel(h.userp, token);
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestIsCancelled(TRITONSERVER_InferenceRequest* r, bool* is_cancelled) {
  WARDEN_REQUIRE(r && is_cancelled, "TRITONSERVER_InferenceRequestIsCancelled");
  *is_cancelled = r->cancelled.load();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriority(TRITONSERVER_InferenceRequest* r, uint32_t* priority) {
  WARDEN_REQUIRE(r && priority, "TRITONSERVER_InferenceRequestPriority");
  *priority = uint32_t(r->priority);
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriorityUInt64(TRITONSERVER_InferenceRequest* r, uint64_t* priority) {
  WARDEN_REQUIRE(r && priority, "TRITONSERVER_InferenceRequestPriorityUInt64");
  *priority = r->priority;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriority(TRITONSERVER_InferenceRequest* r, uint32_t priority) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetPriority");
  r->priority = priority;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriorityUInt64(TRITONSERVER_InferenceRequest* r,
                                                                   uint64_t priority) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetPriorityUInt64");
  r->priority = priority;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestTimeoutMicroseconds(TRITONSERVER_InferenceRequest* r,
                                                                     uint64_t* timeout_us) {
  WARDEN_REQUIRE(r && timeout_us, "TRITONSERVER_InferenceRequestTimeoutMicroseconds");
  *timeout_us = r->timeout_us;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(TRITONSERVER_InferenceRequest* r,
                                                                        uint64_t timeout_us) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetTimeoutMicroseconds");
  r->timeout_us = timeout_us;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddInput(TRITONSERVER_InferenceRequest* r, const char* name,
                                                          const TRITONSERVER_DataType datatype, const int64_t* shape,
                                                          uint64_t dim_count) {
  WARDEN_REQUIRE(r && name && (shape || dim_count == 0), "TRITONSERVER_InferenceRequestAddInput");
  if (FindInput(r, name) != nullptr) {
    return warden::InvalidArg(std::string("input '") + name + "' already exists in request");
  }
  if (dim_count > 64) return warden::InvalidArg(std::string("input '") + name + "' has more than 64 dimensions");
  Request::Input in;
  in.name = name;
  in.datatype = datatype;
  in.shape.assign(shape, shape + dim_count);
  r->inputs.push_back(std::move(in));
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRawInput(TRITONSERVER_InferenceRequest* r, const char* name) {
  WARDEN_REQUIRE(r && name, "TRITONSERVER_InferenceRequestAddRawInput");
  // Triton's rule: a raw input is the request's only input; the host deduces its datatype, shape
  // and name from the target's config when the request is submitted (server-bridge.ts).
  if (!r->inputs.empty()) {
    return warden::InvalidArg(std::string("raw input '") + name + "' can't be added to request with other inputs");
  }
  Request::Input in;
  in.name = name;
  in.raw = true;
  r->inputs.push_back(std::move(in));
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveInput(TRITONSERVER_InferenceRequest* r, const char* name) {
  WARDEN_REQUIRE(r && name, "TRITONSERVER_InferenceRequestRemoveInput");
  for (auto it = r->inputs.begin(); it != r->inputs.end(); ++it) {
    if (it->name == name) {
      r->inputs.erase(it);
      return nullptr;
    }
  }
  return warden::InvalidArg(std::string("input '") + name + "' does not exist in request");
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputs(TRITONSERVER_InferenceRequest* r) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestRemoveAllInputs");
  r->inputs.clear();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputData(TRITONSERVER_InferenceRequest* r, const char* name,
                                                                 const void* base, size_t byte_size,
                                                                 TRITONSERVER_MemoryType memory_type,
                                                                 int64_t memory_type_id) {
  WARDEN_REQUIRE(r && name && (base || byte_size == 0), "TRITONSERVER_InferenceRequestAppendInputData");
  Request::Input* in = FindInput(r, name);
  if (in == nullptr) return warden::InvalidArg(std::string("input '") + name + "' does not exist in request");
  if (memory_type == TRITONSERVER_MEMORY_GPU) {
    return warden::Unsupported(std::string("input '") + name +
                               "' is in GPU memory; Warden's native backend host has no CUDA support");
  }
  if (byte_size > 0) in->chunks.push_back(WARDEN_Chunk{base, uint64_t(byte_size)});
  in->byte_size += byte_size;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id, const char* host_policy_name) {
  return TRITONSERVER_InferenceRequestAppendInputData(r, name, base, byte_size, memory_type, memory_type_id);
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base,
    TRITONSERVER_BufferAttributes* buffer_attributes) {
  WARDEN_REQUIRE(buffer_attributes, "TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes");
  return TRITONSERVER_InferenceRequestAppendInputData(
      r, name, base, buffer_attributes->byte_size, buffer_attributes->memory_type, buffer_attributes->memory_type_id);
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputData(TRITONSERVER_InferenceRequest* r,
                                                                    const char* name) {
  WARDEN_REQUIRE(r && name, "TRITONSERVER_InferenceRequestRemoveAllInputData");
  Request::Input* in = FindInput(r, name);
  if (in == nullptr) return warden::InvalidArg(std::string("input '") + name + "' does not exist in request");
  in->chunks.clear();
  in->byte_size = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRequestedOutput(TRITONSERVER_InferenceRequest* r,
                                                                    const char* name) {
  WARDEN_REQUIRE(r && name, "TRITONSERVER_InferenceRequestAddRequestedOutput");
  for (const auto& o : r->requested_outputs) {
    if (o == name) return nullptr;
  }
  r->requested_outputs.emplace_back(name);
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveRequestedOutput(TRITONSERVER_InferenceRequest* r,
                                                                       const char* name) {
  WARDEN_REQUIRE(r && name, "TRITONSERVER_InferenceRequestRemoveRequestedOutput");
  for (auto it = r->requested_outputs.begin(); it != r->requested_outputs.end(); ++it) {
    if (*it == name) {
      r->requested_outputs.erase(it);
      return nullptr;
    }
  }
  return warden::InvalidArg(std::string("output '") + name + "' does not exist in request");
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs(TRITONSERVER_InferenceRequest* r) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs");
  r->requested_outputs.clear();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetReleaseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceRequestReleaseFn_t request_release_fn,
    void* request_release_userp) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceRequestSetReleaseCallback");
  r->release_fn = request_release_fn;
  r->release_userp = request_release_userp;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetResponseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_ResponseAllocator* response_allocator,
    void* response_allocator_userp, TRITONSERVER_InferenceResponseCompleteFn_t response_fn, void* response_userp) {
  WARDEN_REQUIRE(r && response_allocator && response_fn, "TRITONSERVER_InferenceRequestSetResponseCallback");
  r->allocator = response_allocator;
  r->allocator_userp = response_allocator_userp;
  r->response_fn = response_fn;
  r->response_userp = response_userp;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetStringParameter(TRITONSERVER_InferenceRequest* r, const char* key,
                                                                    const char* value) {
  if (value == nullptr) return warden::InvalidArg("TRITONSERVER_InferenceRequestSetStringParameter: null value");
  return SetParam(r, key, warden::ParamValue::String(value), "TRITONSERVER_InferenceRequestSetStringParameter");
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetIntParameter(TRITONSERVER_InferenceRequest* r, const char* key,
                                                                 const int64_t value) {
  return SetParam(r, key, warden::ParamValue::Int(value), "TRITONSERVER_InferenceRequestSetIntParameter");
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetBoolParameter(TRITONSERVER_InferenceRequest* r, const char* key,
                                                                  const bool value) {
  return SetParam(r, key, warden::ParamValue::Bool(value), "TRITONSERVER_InferenceRequestSetBoolParameter");
}

TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetDoubleParameter(TRITONSERVER_InferenceRequest* r, const char* key,
                                                                    const double value) {
  return SetParam(r, key, warden::ParamValue::Double(value), "TRITONSERVER_InferenceRequestSetDoubleParameter");
}

// ---------------------------------------------------------------- inference

TRITONSERVER_Error* TRITONSERVER_ServerInferAsync(TRITONSERVER_Server* server, TRITONSERVER_InferenceRequest* r,
                                                  TRITONSERVER_InferenceTrace* trace) {
  WARDEN_REQUIRE(server && r, "TRITONSERVER_ServerInferAsync");
  if (r->response_fn == nullptr || r->allocator == nullptr) {
    return warden::InvalidArg("inference request for model '" + r->model_name +
                              "' has no response callback (TRITONSERVER_InferenceRequestSetResponseCallback)");
  }
  if (TRITONSERVER_Error* e = NotInFlight(r, "TRITONSERVER_ServerInferAsync")) return e;
  WARDEN_ServerHooks h;
  if (!Hooks(&h)) return NoServer();
  // The view the host reads during the hook call (the request's own storage stays put).
  std::vector<WARDEN_InferInputView> inputs(r->inputs.size());
  for (size_t i = 0; i < r->inputs.size(); ++i) {
    const Request::Input& in = r->inputs[i];
    inputs[i] = WARDEN_InferInputView{in.name.c_str(),  in.datatype,
                                      in.shape.data(),  uint32_t(in.shape.size()),
                                      in.chunks.data(), uint32_t(in.chunks.size()),
                                      in.byte_size,     in.raw};
  }
  std::vector<const char*> outputs;
  for (const auto& o : r->requested_outputs) outputs.push_back(o.c_str());
  std::vector<WARDEN_ParamDesc> params(r->parameters.size());
  for (size_t i = 0; i < r->parameters.size(); ++i) {
    const warden::ParamValue& p = r->parameters[i];
    params[i] =
        WARDEN_ParamDesc{p.key.c_str(), p.type, p.string_value.c_str(), p.int_value, p.bool_value, p.double_value};
  }
  WARDEN_InferRequestView view{r->model_name.c_str(),
                               r->model_version,
                               r->id.c_str(),
                               r->correlation_id,
                               r->correlation_is_string ? r->correlation_id_string.c_str() : nullptr,
                               r->flags,
                               r->priority,
                               r->timeout_us,
                               inputs.data(),
                               uint32_t(inputs.size()),
                               outputs.data(),
                               uint32_t(outputs.size()),
                               params.data(),
                               uint32_t(params.size())};
  uint64_t token;
  {
    std::lock_guard<std::mutex> lk(inflight_mu);
    token = next_token++;
    inflight.emplace(token, r);
  }
  r->cancelled = false;
  r->token = token;
  TRITONSERVER_Error* err = h.infer(h.userp, r->server->owner, &view, token);
  if (err != nullptr) {
    std::lock_guard<std::mutex> lk(inflight_mu);
    inflight.erase(token);
    r->token = 0;
  }
  return err;
}

// ---------------------------------------------------------------- server queries

TRITONSERVER_Error* TRITONSERVER_ServerModelIsReady(TRITONSERVER_Server* server, const char* model_name,
                                                    const int64_t model_version, bool* ready) {
  WARDEN_REQUIRE(ready, "TRITONSERVER_ServerModelIsReady");
  std::string out;
  TRITONSERVER_Error* e = Query(server, WARDEN_QUERY_MODEL_READY, model_name, model_version, nullptr, &out,
                                "TRITONSERVER_ServerModelIsReady");
  if (e == nullptr) *ready = out == "true";
  return e;
}

TRITONSERVER_Error* TRITONSERVER_ServerModelMetadata(TRITONSERVER_Server* server, const char* model_name,
                                                     const int64_t model_version,
                                                     TRITONSERVER_Message** model_metadata) {
  WARDEN_REQUIRE(model_metadata, "TRITONSERVER_ServerModelMetadata");
  std::string out;
  TRITONSERVER_Error* e = Query(server, WARDEN_QUERY_MODEL_METADATA, model_name, model_version, nullptr, &out,
                                "TRITONSERVER_ServerModelMetadata");
  if (e == nullptr) *model_metadata = new TRITONSERVER_Message{std::move(out)};
  return e;
}

TRITONSERVER_Error* TRITONSERVER_ServerModelConfig(TRITONSERVER_Server* server, const char* model_name,
                                                   const int64_t model_version, const uint32_t config_version,
                                                   TRITONSERVER_Message** model_config) {
  WARDEN_REQUIRE(model_config, "TRITONSERVER_ServerModelConfig");
  if (config_version != 1) {
    return warden::Unsupported("model configuration version " + std::to_string(config_version) +
                               " not supported, supported versions are: 1");
  }
  std::string out;
  TRITONSERVER_Error* e = Query(server, WARDEN_QUERY_MODEL_CONFIG, model_name, model_version, nullptr, &out,
                                "TRITONSERVER_ServerModelConfig");
  if (e == nullptr) *model_config = new TRITONSERVER_Message{std::move(out)};
  return e;
}

TRITONSERVER_Error* TRITONSERVER_ServerModelTransactionProperties(TRITONSERVER_Server* server, const char* model_name,
                                                                  const int64_t model_version, uint32_t* txn_flags,
                                                                  void** voidp) {
  WARDEN_REQUIRE(txn_flags, "TRITONSERVER_ServerModelTransactionProperties");
  std::string out;
  TRITONSERVER_Error* e = Query(server, WARDEN_QUERY_MODEL_TRANSACTION, model_name, model_version, nullptr, &out,
                                "TRITONSERVER_ServerModelTransactionProperties");
  if (e != nullptr) return e;
  *txn_flags = out == "decoupled" ? TRITONSERVER_TXN_DECOUPLED : TRITONSERVER_TXN_ONE_TO_ONE;
  if (voidp != nullptr) *voidp = nullptr;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_ServerLoadModel(TRITONSERVER_Server* server, const char* model_name) {
  return Query(server, WARDEN_QUERY_LOAD_MODEL, model_name, -1, nullptr, nullptr, "TRITONSERVER_ServerLoadModel");
}

TRITONSERVER_Error* TRITONSERVER_ServerLoadModelWithParameters(TRITONSERVER_Server* server, const char* model_name,
                                                               const TRITONSERVER_Parameter** parameters,
                                                               const uint64_t parameter_count) {
  WARDEN_REQUIRE(parameters || parameter_count == 0, "TRITONSERVER_ServerLoadModelWithParameters");
  // {"config": "<json>", "files": {"file:<path>": "<base64>"}} (the load API's parameters).
  std::string config;
  bool has_config = false;
  std::string files;
  for (uint64_t i = 0; i < parameter_count; ++i) {
    const TRITONSERVER_Parameter* p = parameters[i];
    if (p == nullptr) return warden::InvalidArg("TRITONSERVER_ServerLoadModelWithParameters: null parameter");
    if (p->name == "config") {
      if (p->type != TRITONSERVER_PARAMETER_STRING) {
        return warden::InvalidArg("the 'config' load parameter must be a STRING parameter");
      }
      config = p->string_value;
      has_config = true;
    } else if (p->name.rfind("file:", 0) == 0) {
      if (p->type != TRITONSERVER_PARAMETER_BYTES || (p->bytes == nullptr && p->bytes_size > 0)) {
        return warden::InvalidArg("load parameter '" + p->name + "' must be a BYTES parameter");
      }
      if (!files.empty()) files += ',';
      files += JsonString(p->name) + ":\"" + Base64(static_cast<const uint8_t*>(p->bytes), p->bytes_size) + "\"";
    } else {
      return warden::InvalidArg("unrecognized load parameter '" + p->name + "'");
    }
  }
  std::string json = "{";
  if (has_config) json += "\"config\":" + JsonString(config) + ",";
  json += "\"files\":{" + files + "}}";
  return Query(server, WARDEN_QUERY_LOAD_MODEL, model_name, -1, json.c_str(), nullptr,
               "TRITONSERVER_ServerLoadModelWithParameters");
}

TRITONSERVER_Error* TRITONSERVER_ServerUnloadModel(TRITONSERVER_Server* server, const char* model_name) {
  return Query(server, WARDEN_QUERY_UNLOAD_MODEL, model_name, -1, nullptr, nullptr, "TRITONSERVER_ServerUnloadModel");
}

TRITONSERVER_Error* TRITONSERVER_ServerUnloadModelAndDependents(TRITONSERVER_Server* server, const char* model_name) {
  return Query(server, WARDEN_QUERY_UNLOAD_MODEL_AND_DEPENDENTS, model_name, -1, nullptr, nullptr,
               "TRITONSERVER_ServerUnloadModelAndDependents");
}

}  // extern "C"
