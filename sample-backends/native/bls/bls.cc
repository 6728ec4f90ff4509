// BLS sample backend (Triton's "business logic scripting" pattern, written against Triton's public
// headers only): each request is forwarded to another model through Triton's in-process inference
// API — exactly the calls Triton's BLS example backend and its Python backend make:
//   TRITONBACKEND_ModelServer, TRITONSERVER_ResponseAllocatorNew / SetQueryFunction /
//   SetBufferAttributesFunction / Delete, TRITONSERVER_ServerModelIsReady / ModelConfig /
//   ModelMetadata / ModelTransactionProperties, TRITONSERVER_InferenceRequestNew / SetId / SetCorrelationId / SetFlags /
//   SetPriorityUInt64 / SetTimeoutMicroseconds / SetStringParameter / AddInput /
//   AppendInputData / AppendInputDataWithBufferAttributes / AddRequestedOutput /
//   SetReleaseCallback / SetResponseCallback / Cancel / IsCancelled / Delete,
//   TRITONSERVER_ServerInferAsync, TRITONSERVER_InferenceResponseError / OutputCount / Output /
//   ParameterCount / Parameter / Id / Model / Delete, TRITONSERVER_ServerLoadModel /
//   LoadModelWithParameters / UnloadModel / UnloadModelAndDependents.
//
// Model config parameters: `target_model` (required), `target_version` (default "-1").
// The BLS model declares the target's inputs and outputs (same names). Every input is forwarded
// (split into two appended pieces, to exercise multi-buffer inputs); every output the client
// requested is requested from the target. A decoupled target (its config says so) may answer many
// times: each output is then concatenated along dimension 0 over all responses. The response
// carries parameters `bls_responses` (responses received), `target_platform` (from the target's
// metadata), `target_decoupled`, `target_response_model` and `target_response_id`.
//
// Request parameters (optional):
//   `control`          "unload" | "unload_dependents" | "load" | "load_config:<json>" — a
//                      repository action on the target before forwarding
//   `cancel_after_ms`  cancel the in-process request if it has not finished after this long
//   `raw_input`        true: add the inputs with TRITONSERVER_InferenceRequestAddRawInput (the
//                      target's config gives datatype and shape) instead of ...AddInput
// Errors of the target (or of the in-process API) are the request's error, code and message kept.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/sample_util.h"

namespace {

std::atomic<long> live_buffers{0};  // allocator buffers not yet released by the host
const char kBufferTag = 'B';         // our buffer_userp: must come back from ...ResponseOutput

struct ModelState {
  std::string name;
  std::string target;
  int64_t target_version = -1;
};

struct InstanceState {
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
};

/** One in-process request: what its callbacks delivered. */
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<TRITONSERVER_InferenceResponse*> responses;
  bool final = false;
  bool released = false;
  TRITONSERVER_InferenceRequest* request = nullptr;
};

#define BLS_RETURN_IF_ERROR(x)             \
  do {                                     \
    TRITONSERVER_Error* e__ = (x);         \
    if (e__ != nullptr) return e__;        \
  } while (0)

TRITONSERVER_Error* Err(TRITONSERVER_Error_Code code, const std::string& msg) {
  return TRITONSERVER_ErrorNew(code, msg.c_str());
}

// ---------------------------------------------------------------- allocator

TRITONSERVER_Error* Alloc(TRITONSERVER_ResponseAllocator*, const char* name, size_t byte_size,
                          TRITONSERVER_MemoryType, int64_t, void*, void** buffer, void** buffer_userp,
                          TRITONSERVER_MemoryType* actual_type, int64_t* actual_id) {
  *buffer = nullptr;
  if (byte_size > 0) {
    *buffer = std::malloc(byte_size);
    if (*buffer == nullptr) return Err(TRITONSERVER_ERROR_UNAVAILABLE, std::string("bls: out of memory for ") + name);
  }
  *buffer_userp = const_cast<char*>(&kBufferTag);
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_id = 0;
  live_buffers++;
  return nullptr;
}

TRITONSERVER_Error* Release(TRITONSERVER_ResponseAllocator*, void* buffer, void* buffer_userp, size_t,
                            TRITONSERVER_MemoryType, int64_t) {
  if (buffer_userp != &kBufferTag) return Err(TRITONSERVER_ERROR_INTERNAL, "bls: foreign buffer released");
  std::free(buffer);
  live_buffers--;
  return nullptr;
}

TRITONSERVER_Error* Query(TRITONSERVER_ResponseAllocator*, void*, const char*, size_t*,
                          TRITONSERVER_MemoryType* type, int64_t* id) {
  *type = TRITONSERVER_MEMORY_CPU;
  *id = 0;
  return nullptr;
}

TRITONSERVER_Error* Attributes(TRITONSERVER_ResponseAllocator*, const char*, TRITONSERVER_BufferAttributes* attrs,
                               void*, void* buffer_userp) {
  TRITONSERVER_MemoryType type;
  BLS_RETURN_IF_ERROR(TRITONSERVER_BufferAttributesMemoryType(attrs, &type));
  if (type != TRITONSERVER_MEMORY_CPU || buffer_userp != &kBufferTag) {
    return Err(TRITONSERVER_ERROR_INTERNAL, "bls: unexpected buffer attributes");
  }
  return nullptr;
}

// ---------------------------------------------------------------- callbacks

void OnResponse(TRITONSERVER_InferenceResponse* response, const uint32_t flags, void* userp) {
  auto* p = static_cast<Pending*>(userp);
  std::lock_guard<std::mutex> lk(p->mu);
  if (response != nullptr) p->responses.push_back(response);
  if ((flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0) p->final = true;
  p->cv.notify_all();
}

void OnRelease(TRITONSERVER_InferenceRequest* request, const uint32_t flags, void* userp) {
  auto* p = static_cast<Pending*>(userp);
  {
    std::lock_guard<std::mutex> lk(p->mu);
    p->released = true;  // under the lock: a concurrent Cancel either ran before or sees this
  }
  TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestDelete(request));
  std::lock_guard<std::mutex> lk(p->mu);
  p->cv.notify_all();
}

// ---------------------------------------------------------------- helpers

std::string StringParam(const char* json, size_t len, const char* key, const std::string& dflt) {
  const char* path[3] = {"parameters", key, "string_value"};
  const char* v = nullptr;
  size_t n = 0;
  if (sample_json_lookup(json, len, path, 3, &v, &n) && n >= 2) return std::string(v + 1, n - 2);
  return dflt;
}

/** Request parameters this backend reads. */
void RequestParams(TRITONBACKEND_Request* request, std::string* control, int64_t* cancel_after_ms, bool* raw_input) {
  uint32_t count = 0;
  TRITONSERVER_ErrorDelete(TRITONBACKEND_RequestParameterCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* key = nullptr;
    TRITONSERVER_ParameterType type;
    const void* v = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestParameter(request, i, &key, &type, &v)) {
      TRITONSERVER_ErrorDelete(e);
      continue;
    }
    if (std::strcmp(key, "control") == 0 && type == TRITONSERVER_PARAMETER_STRING) {
      *control = static_cast<const char*>(v);
    } else if (std::strcmp(key, "cancel_after_ms") == 0 && type == TRITONSERVER_PARAMETER_INT) {
      *cancel_after_ms = *static_cast<const int64_t*>(v);
    } else if (std::strcmp(key, "raw_input") == 0 && type == TRITONSERVER_PARAMETER_BOOL) {
      *raw_input = *static_cast<const bool*>(v);
    }
  }
}

TRITONSERVER_Error* Control(TRITONSERVER_Server* server, const std::string& target, const std::string& control) {
  if (control.empty()) return nullptr;
  if (control == "unload") return TRITONSERVER_ServerUnloadModel(server, target.c_str());
  if (control == "unload_dependents") return TRITONSERVER_ServerUnloadModelAndDependents(server, target.c_str());
  if (control == "load") return TRITONSERVER_ServerLoadModel(server, target.c_str());
  if (control.rfind("load_config:", 0) == 0) {
    std::string config = control.substr(12);
    TRITONSERVER_Parameter* p = TRITONSERVER_ParameterNew("config", TRITONSERVER_PARAMETER_STRING, config.c_str());
    const TRITONSERVER_Parameter* params[1] = {p};
    TRITONSERVER_Error* e = TRITONSERVER_ServerLoadModelWithParameters(server, target.c_str(), params, 1);
    TRITONSERVER_ParameterDelete(p);
    return e;
  }
  return Err(TRITONSERVER_ERROR_INVALID_ARG, "bls: unknown control '" + control + "'");
}

/** Look at the target the way a BLS model does before calling it. */
TRITONSERVER_Error* Inspect(TRITONSERVER_Server* server, const ModelState& ms, bool* decoupled, std::string* platform) {
  bool ready = false;
  BLS_RETURN_IF_ERROR(TRITONSERVER_ServerModelIsReady(server, ms.target.c_str(), ms.target_version, &ready));
  if (!ready) return Err(TRITONSERVER_ERROR_UNAVAILABLE, "bls: target model '" + ms.target + "' is not ready");
  TRITONSERVER_Message* msg = nullptr;
  BLS_RETURN_IF_ERROR(TRITONSERVER_ServerModelConfig(server, ms.target.c_str(), ms.target_version, 1, &msg));
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* e = TRITONSERVER_MessageSerializeToJson(msg, &base, &size);
  if (e == nullptr) {
    const char* path[2] = {"model_transaction_policy", "decoupled"};
    const char* v = nullptr;
    size_t n = 0;
    *decoupled = sample_json_lookup(base, size, path, 2, &v, &n) && n == 4 && std::strncmp(v, "true", 4) == 0;
  }
  TRITONSERVER_MessageDelete(msg);
  BLS_RETURN_IF_ERROR(e);
  // Triton's Python backend asks this before every BLS call; it must agree with the config.
  uint32_t txn_flags = 0;
  void* txn_voidp = nullptr;
  BLS_RETURN_IF_ERROR(TRITONSERVER_ServerModelTransactionProperties(server, ms.target.c_str(), ms.target_version, &txn_flags, &txn_voidp));
  const uint32_t want = *decoupled ? TRITONSERVER_TXN_DECOUPLED : TRITONSERVER_TXN_ONE_TO_ONE;
  if (txn_flags != want) {
    return Err(TRITONSERVER_ERROR_INTERNAL, "bls: TRITONSERVER_ServerModelTransactionProperties says " + std::to_string(txn_flags) +
                                                " for '" + ms.target + "', its config says " + std::to_string(want));
  }
  BLS_RETURN_IF_ERROR(TRITONSERVER_ServerModelMetadata(server, ms.target.c_str(), ms.target_version, &msg));
  e = TRITONSERVER_MessageSerializeToJson(msg, &base, &size);
  if (e == nullptr) {
    const char* path[1] = {"platform"};
    const char* v = nullptr;
    size_t n = 0;
    if (sample_json_lookup(base, size, path, 1, &v, &n) && n >= 2) platform->assign(v + 1, n - 2);
  }
  TRITONSERVER_MessageDelete(msg);
  return e;
}

/** Build the in-process request from the BLS request. */
TRITONSERVER_Error* BuildRequest(TRITONSERVER_Server* server, const ModelState& ms, TRITONBACKEND_Request* request,
                                 bool raw_input, TRITONSERVER_InferenceRequest** out) {
  TRITONSERVER_InferenceRequest* r = nullptr;
  BLS_RETURN_IF_ERROR(TRITONSERVER_InferenceRequestNew(&r, server, ms.target.c_str(), ms.target_version));
  auto fail = [r](TRITONSERVER_Error* e) {
    TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestDelete(r));
    return e;
  };
  const char* id = nullptr;
  TRITONSERVER_ErrorDelete(TRITONBACKEND_RequestId(request, &id));
  std::string bls_id = std::string(id == nullptr ? "" : id) + "/bls";
  if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetId(r, bls_id.c_str())) return fail(e);
  uint64_t corr = 0;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestCorrelationId(request, &corr)) {
    TRITONSERVER_ErrorDelete(e);  // a string correlation id: not forwarded
  } else if (TRITONSERVER_Error* e2 = TRITONSERVER_InferenceRequestSetCorrelationId(r, corr)) {
    return fail(e2);
  }
  if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetFlags(r, 0)) return fail(e);
  if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetPriorityUInt64(r, 0)) return fail(e);
  if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(r, 0)) return fail(e);
  if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetStringParameter(r, "bls_caller", ms.name.c_str())) return fail(e);

  uint32_t input_count = 0;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInputCount(request, &input_count)) return fail(e);
  for (uint32_t i = 0; i < input_count; ++i) {
    TRITONBACKEND_Input* input = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestInputByIndex(request, i, &input)) return fail(e);
    const char* name = nullptr;
    TRITONSERVER_DataType dt;
    const int64_t* shape = nullptr;
    uint32_t dims = 0;
    uint64_t bytes = 0;
    uint32_t buffers = 0;
    if (TRITONSERVER_Error* e = TRITONBACKEND_InputProperties(input, &name, &dt, &shape, &dims, &bytes, &buffers)) return fail(e);
    if (TRITONSERVER_Error* e = raw_input ? TRITONSERVER_InferenceRequestAddRawInput(r, name)
                                          : TRITONSERVER_InferenceRequestAddInput(r, name, dt, shape, dims)) {
      return fail(e);
    }
    for (uint32_t b = 0; b < buffers; ++b) {
      const void* base = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType mt;
      int64_t mt_id;
      if (TRITONSERVER_Error* e = TRITONBACKEND_InputBuffer(input, b, &base, &size, &mt, &mt_id)) return fail(e);
      // Two pieces: the first plainly, the second with buffer attributes (both APIs exercised).
      uint64_t half = size / 2;
      if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestAppendInputData(r, name, base, half, mt, mt_id)) return fail(e);
      TRITONSERVER_BufferAttributes* attrs = nullptr;
      if (TRITONSERVER_Error* e = TRITONSERVER_BufferAttributesNew(&attrs)) return fail(e);
      TRITONSERVER_BufferAttributesSetMemoryType(attrs, mt);
      TRITONSERVER_BufferAttributesSetMemoryTypeId(attrs, mt_id);
      TRITONSERVER_BufferAttributesSetByteSize(attrs, size - half);
      TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes(
          r, name, static_cast<const char*>(base) + half, attrs);
      TRITONSERVER_BufferAttributesDelete(attrs);
      if (e != nullptr) return fail(e);
    }
  }
  uint32_t output_count = 0;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputCount(request, &output_count)) return fail(e);
  for (uint32_t i = 0; i < output_count; ++i) {
    const char* name = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputName(request, i, &name)) return fail(e);
    if (TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestAddRequestedOutput(r, name)) return fail(e);
  }
  *out = r;
  return nullptr;
}

/** The BLS response from everything the target sent (outputs concatenated along dim 0). */
TRITONSERVER_Error* Answer(TRITONBACKEND_Request* request, Pending& p, bool decoupled, const std::string& platform) {
  for (TRITONSERVER_InferenceResponse* r : p.responses) {
    // The caller owns the returned error (as in Triton): hand it on as the BLS request's error.
    if (TRITONSERVER_Error* e = TRITONSERVER_InferenceResponseError(r)) return e;
  }
  TRITONBACKEND_Response* response = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  auto fail = [response](TRITONSERVER_Error* e) {
    TRITONBACKEND_ResponseDelete(response);
    return e;
  };
  uint32_t output_count = 0;
  if (TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputCount(request, &output_count)) return fail(e);
  for (uint32_t i = 0; i < output_count; ++i) {
    const char* wanted = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestOutputName(request, i, &wanted)) return fail(e);
    std::vector<int64_t> shape;
    TRITONSERVER_DataType dtype = TRITONSERVER_TYPE_INVALID;
    std::vector<char> data;
    for (TRITONSERVER_InferenceResponse* r : p.responses) {
      uint32_t n = 0;
      if (TRITONSERVER_Error* e = TRITONSERVER_InferenceResponseOutputCount(r, &n)) return fail(e);
      for (uint32_t k = 0; k < n; ++k) {
        const char* name = nullptr;
        TRITONSERVER_DataType dt;
        const int64_t* s = nullptr;
        uint64_t dims = 0;
        const void* base = nullptr;
        size_t size = 0;
        TRITONSERVER_MemoryType mt;
        int64_t mt_id;
        void* userp = nullptr;
        if (TRITONSERVER_Error* e = TRITONSERVER_InferenceResponseOutput(r, k, &name, &dt, &s, &dims, &base, &size, &mt, &mt_id, &userp)) {
          return fail(e);
        }
        if (std::strcmp(name, wanted) != 0) continue;
        if (userp != &kBufferTag || mt != TRITONSERVER_MEMORY_CPU) {
          return fail(Err(TRITONSERVER_ERROR_INTERNAL, "bls: output buffer did not come from our allocator"));
        }
        if (shape.empty()) {
          shape.assign(s, s + dims);
          dtype = dt;
        } else if (!shape.empty() && dims > 0) {
          shape[0] += s[0];  // decoupled: concatenate along dimension 0
        }
        data.insert(data.end(), static_cast<const char*>(base), static_cast<const char*>(base) + size);
      }
    }
    if (dtype == TRITONSERVER_TYPE_INVALID) continue;  // the target did not produce it
    TRITONBACKEND_Output* out = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_ResponseOutput(response, &out, wanted, dtype, shape.data(), uint32_t(shape.size()))) return fail(e);
    void* buf = nullptr;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    if (TRITONSERVER_Error* e = TRITONBACKEND_OutputBuffer(out, &buf, data.size(), &mt, &mt_id)) return fail(e);
    if (!data.empty()) std::memcpy(buf, data.data(), data.size());
  }
  TRITONBACKEND_ResponseSetIntParameter(response, "bls_responses", int64_t(p.responses.size()));
  TRITONBACKEND_ResponseSetStringParameter(response, "target_platform", platform.c_str());
  TRITONBACKEND_ResponseSetBoolParameter(response, "target_decoupled", decoupled);
  if (!p.responses.empty()) {
    const char* model = nullptr;
    int64_t version = 0;
    const char* rid = nullptr;
    if (TRITONSERVER_InferenceResponseModel(p.responses[0], &model, &version) == nullptr) {
      TRITONBACKEND_ResponseSetStringParameter(response, "target_response_model", model);
    }
    if (TRITONSERVER_InferenceResponseId(p.responses[0], &rid) == nullptr) {
      TRITONBACKEND_ResponseSetStringParameter(response, "target_response_id", rid);
    }
  }
  return TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr);
}

TRITONSERVER_Error* Forward(TRITONBACKEND_ModelInstance* instance, const ModelState& ms, InstanceState& is,
                            TRITONBACKEND_Request* request) {
  TRITONBACKEND_Model* model = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  TRITONSERVER_Server* server = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelServer(model, &server));
  std::string control;
  int64_t cancel_after_ms = -1;
  bool raw_input = false;
  RequestParams(request, &control, &cancel_after_ms, &raw_input);
  BLS_RETURN_IF_ERROR(Control(server, ms.target, control));
  bool decoupled = false;
  std::string platform;
  BLS_RETURN_IF_ERROR(Inspect(server, ms, &decoupled, &platform));

  Pending p;
  BLS_RETURN_IF_ERROR(BuildRequest(server, ms, request, raw_input, &p.request));
  TRITONSERVER_InferenceRequest* r = p.request;
  TRITONSERVER_Error* e = TRITONSERVER_InferenceRequestSetReleaseCallback(r, OnRelease, &p);
  if (e == nullptr) e = TRITONSERVER_InferenceRequestSetResponseCallback(r, is.allocator, nullptr, OnResponse, &p);
  if (e == nullptr) e = TRITONSERVER_ServerInferAsync(server, r, nullptr);
  if (e != nullptr) {  // not taken: still ours
    TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestDelete(r));
    return e;
  }
  {
    std::unique_lock<std::mutex> lk(p.mu);
    if (cancel_after_ms >= 0 &&
        !p.cv.wait_for(lk, std::chrono::milliseconds(cancel_after_ms), [&p] { return p.final; }) && !p.released) {
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestCancel(r));
      bool cancelled = false;
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceRequestIsCancelled(r, &cancelled));
      if (!cancelled) SAMPLE_LOG(TRITONSERVER_LOG_ERROR, "%s", "bls: request not marked cancelled");
    }
    if (!p.cv.wait_for(lk, std::chrono::seconds(60), [&p] { return p.final && p.released; })) {
      // Never give the Pending away while callbacks may still come: wait for them.
      p.cv.wait(lk, [&p] { return p.final && p.released; });
    }
  }
  e = Answer(request, p, decoupled, platform);
  for (TRITONSERVER_InferenceResponse* resp : p.responses) TRITONSERVER_InferenceResponseDelete(resp);
  return e;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  char* json = nullptr;
  size_t len = 0;
  BLS_RETURN_IF_ERROR(sample_model_config(model, &json, &len));
  auto* ms = new ModelState;
  ms->target = StringParam(json, len, "target_model", "");
  std::string version = StringParam(json, len, "target_version", "-1");
  std::free(json);
  const char* name = nullptr;
  TRITONSERVER_ErrorDelete(TRITONBACKEND_ModelName(model, &name));
  ms->name = name == nullptr ? "" : name;
  char* end = nullptr;
  ms->target_version = std::strtoll(version.c_str(), &end, 10);
  if (ms->target.empty() || end == version.c_str() || *end != 0) {
    delete ms;
    return Err(TRITONSERVER_ERROR_INVALID_ARG, "bls: parameters 'target_model' (and an integer 'target_version') are required");
  }
  return TRITONBACKEND_ModelSetState(model, ms);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* s = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &s));
  delete static_cast<ModelState*>(s);
  SAMPLE_LOG(TRITONSERVER_LOG_INFO, "bls: %ld response buffers outstanding", live_buffers.load());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  // Like Triton's Python backend: the in-process machinery is set up at instance initialize.
  auto* is = new InstanceState;
  TRITONSERVER_Error* e = TRITONSERVER_ResponseAllocatorNew(&is->allocator, Alloc, Release, nullptr);
  if (e == nullptr) e = TRITONSERVER_ResponseAllocatorSetQueryFunction(is->allocator, Query);
  if (e == nullptr) e = TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(is->allocator, Attributes);
  if (e == nullptr) e = TRITONBACKEND_ModelInstanceSetState(instance, is);
  if (e != nullptr) {
    if (is->allocator != nullptr) TRITONSERVER_ResponseAllocatorDelete(is->allocator);
    delete is;
  }
  return e;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* s = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &s));
  auto* is = static_cast<InstanceState*>(s);
  if (is != nullptr) {
    TRITONSERVER_ResponseAllocatorDelete(is->allocator);
    delete is;
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  TRITONBACKEND_Model* model = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* ms = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &ms));
  void* is = nullptr;
  BLS_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &is));
  for (uint32_t i = 0; i < request_count; ++i) {
    TRITONSERVER_Error* e = Forward(instance, *static_cast<ModelState*>(ms), *static_cast<InstanceState*>(is), requests[i]);
    if (e != nullptr) sample_respond_error(requests[i], e);
    TRITONSERVER_ErrorDelete(TRITONBACKEND_RequestRelease(requests[i], TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"
