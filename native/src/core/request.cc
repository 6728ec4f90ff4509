// Requests and their inputs (spec §6.3 Request, Input/Output) and request release (spec §6.6,
// §6.7): every request handed to a backend is released exactly once.
#include <string>
#include <unordered_map>

#include "objects.h"

namespace warden {

namespace {
// Process-lifetime state is heap-allocated and never destroyed: backend threads may still run
// while the process exits, and must not find these destructed.
struct Registry {
  std::mutex mu;
  std::unordered_map<TRITONBACKEND_Request*, uint64_t> live;
};
Registry& registry = *new Registry;
std::atomic<uint64_t> serial_counter{1};
}  // namespace

uint64_t NextSerial() { return serial_counter.fetch_add(1); }

void RegistryAdd(TRITONBACKEND_Request* request, uint64_t serial) {
  std::lock_guard<std::mutex> lk(registry.mu);
  registry.live[request] = serial;
}

bool RegistryTake(TRITONBACKEND_Request* request, const uint64_t* serial) {
  std::lock_guard<std::mutex> lk(registry.mu);
  auto it = registry.live.find(request);
  if (it == registry.live.end() || (serial != nullptr && it->second != *serial)) return false;
  registry.live.erase(it);
  return true;
}

namespace {
// Released requests are kept as empty shells for a while before their memory is freed, so a
// second TRITONBACKEND_RequestRelease of the same pointer is reliably reported (the address cannot
// have been reused by a newer request yet) instead of releasing someone else's request.
constexpr size_t kQuarantine = 4096;
struct Quarantine {
  std::mutex mu;
  std::deque<TRITONBACKEND_Request*> shells;
};
Quarantine& quarantine = *new Quarantine;
}  // namespace

void ReleaseRequest(TRITONBACKEND_Request* request) {
  if (request->release_fn != nullptr) request->release_fn(request->userp, &request->stats);
  *request = TRITONBACKEND_Request();  // drops inputs and the request's hold on its response sink
  TRITONBACKEND_Request* evicted = nullptr;
  {
    std::lock_guard<std::mutex> lk(quarantine.mu);
    quarantine.shells.push_back(request);
    if (quarantine.shells.size() > kQuarantine) {
      evicted = quarantine.shells.front();
      quarantine.shells.pop_front();
    }
  }
  delete evicted;
}

}  // namespace warden

namespace {

TRITONSERVER_Error* FindInput(TRITONBACKEND_Request* request, const char* name, TRITONBACKEND_Input** input) {
  for (auto& in : request->inputs) {
    if (in.name == name) {
      *input = &in;
      return nullptr;
    }
  }
  return warden::Err(TRITONSERVER_ERROR_INVALID_ARG, std::string("unknown request input name ") + name);
}

void Properties(TRITONBACKEND_Input* input, const char** name, TRITONSERVER_DataType* datatype, const int64_t** shape,
                uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count) {
  if (name != nullptr) *name = input->name.c_str();
  if (datatype != nullptr) *datatype = input->datatype;
  if (shape != nullptr) *shape = input->shape.data();
  if (dims_count != nullptr) *dims_count = uint32_t(input->shape.size());
  if (byte_size != nullptr) *byte_size = input->byte_size;
  if (buffer_count != nullptr) *buffer_count = 1;  // Warden hands each input over contiguous
}

TRITONSERVER_Error* Buffer(TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
                           uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  if (index != 0) {
    return warden::InvalidArg("input '" + input->name + "' has 1 buffer, index " + std::to_string(index) +
                              " is out of range");
  }
  *buffer = input->data;
  *buffer_byte_size = input->byte_size;
  *memory_type = TRITONSERVER_MEMORY_CPU;  // whatever was preferred, inputs live in CPU memory
  *memory_type_id = 0;
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_RequestId(TRITONBACKEND_Request* request, const char** id) {
  WARDEN_REQUIRE(request && id, "TRITONBACKEND_RequestId");
  *id = request->id.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestIsCancelled(TRITONBACKEND_Request* request, bool* is_cancelled) {
  WARDEN_REQUIRE(request && is_cancelled, "TRITONBACKEND_RequestIsCancelled");
  *is_cancelled = request->sink->cancelled.load();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationId(TRITONBACKEND_Request* request, uint64_t* id) {
  WARDEN_REQUIRE(request && id, "TRITONBACKEND_RequestCorrelationId");
  if (request->correlation_is_string) {
    return warden::InvalidArg("correlation ID in request is not an unsigned int");
  }
  *id = request->correlation_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationIdString(TRITONBACKEND_Request* request, const char** id) {
  WARDEN_REQUIRE(request && id, "TRITONBACKEND_RequestCorrelationIdString");
  if (!request->correlation_is_string) {
    return warden::InvalidArg("correlation ID in request is not a string");
  }
  *id = request->correlation_id_string.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InferenceRequestTimeoutMicroseconds(TRITONBACKEND_Request* request,
                                                                      uint64_t* timeout) {
  WARDEN_REQUIRE(request && timeout, "TRITONBACKEND_InferenceRequestTimeoutMicroseconds");
  *timeout = request->timeout_us;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestFlags(TRITONBACKEND_Request* request, uint32_t* flags) {
  WARDEN_REQUIRE(request && flags, "TRITONBACKEND_RequestFlags");
  *flags = request->flags;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestParameterCount(TRITONBACKEND_Request* request, uint32_t* count) {
  WARDEN_REQUIRE(request && count, "TRITONBACKEND_RequestParameterCount");
  *count = uint32_t(request->parameters.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestParameter(TRITONBACKEND_Request* request, const uint32_t index,
                                                   const char** key, TRITONSERVER_ParameterType* type,
                                                   const void** vvalue) {
  WARDEN_REQUIRE(request && key && type && vvalue, "TRITONBACKEND_RequestParameter");
  if (index >= request->parameters.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": request has " +
                              std::to_string(request->parameters.size()) + " parameters");
  }
  const warden::ParamValue& p = request->parameters[index];
  *key = p.key.c_str();
  *type = p.type;
  *vvalue = p.VValue();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  WARDEN_REQUIRE(request && count, "TRITONBACKEND_RequestInputCount");
  *count = uint32_t(request->inputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                   const char** input_name) {
  WARDEN_REQUIRE(request && input_name, "TRITONBACKEND_RequestInputName");
  if (index >= request->inputs.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": request has " +
                              std::to_string(request->inputs.size()) + " inputs");
  }
  *input_name = request->inputs[index].name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInput(TRITONBACKEND_Request* request, const char* name,
                                               TRITONBACKEND_Input** input) {
  WARDEN_REQUIRE(request && name && input, "TRITONBACKEND_RequestInput");
  return FindInput(request, name, input);
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputByIndex(TRITONBACKEND_Request* request, const uint32_t index,
                                                      TRITONBACKEND_Input** input) {
  WARDEN_REQUIRE(request && input, "TRITONBACKEND_RequestInputByIndex");
  if (index >= request->inputs.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": request has " +
                              std::to_string(request->inputs.size()) + " inputs");
  }
  *input = &request->inputs[index];
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count) {
  WARDEN_REQUIRE(request && count, "TRITONBACKEND_RequestOutputCount");
  *count = uint32_t(request->requested_outputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(TRITONBACKEND_Request* request, const uint32_t index,
                                                    const char** output_name) {
  WARDEN_REQUIRE(request && output_name, "TRITONBACKEND_RequestOutputName");
  if (index >= request->requested_outputs.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": request has " +
                              std::to_string(request->requested_outputs.size()) + " requested outputs");
  }
  *output_name = request->requested_outputs[index].c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputBufferProperties(TRITONBACKEND_Request* request, const char* name,
                                                                size_t* byte_size, TRITONSERVER_MemoryType* memory_type,
                                                                int64_t* memory_type_id) {
  WARDEN_REQUIRE(request, "TRITONBACKEND_RequestOutputBufferProperties");
  // As Triton answers for its HTTP and gRPC frontends (their allocators' query functions): outputs
  // go to CPU memory and `byte_size` is left as the backend set it (the host has no size hint).
  // A null `name` asks about every output, as in Triton.
  (void)name;
  (void)byte_size;
  if (memory_type != nullptr) *memory_type = TRITONSERVER_MEMORY_CPU;
  if (memory_type_id != nullptr) *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t release_flags) {
  WARDEN_REQUIRE(request, "TRITONBACKEND_RequestRelease");
  const bool reschedule = (release_flags & TRITONSERVER_REQUEST_RELEASE_RESCHEDULE) != 0;
  if (!reschedule && (release_flags & TRITONSERVER_REQUEST_RELEASE_ALL) == 0) {
    return warden::InvalidArg("unknown request release flags " + std::to_string(release_flags));
  }
  const uint64_t serial = request->serial;  // read before the take: a released shell reads 0
  if (!warden::RegistryTake(request, nullptr)) {
    return warden::InvalidArg("request was already released (TRITONBACKEND_RequestRelease called twice)");
  }
  if (reschedule) {
    // RESCHEDULE wins over ALL, as in Triton core (infer_request.cc, sequence_utils.cc). Only the
    // iterative sequence batcher can take the request back; elsewhere the backend keeps it.
    if (!request->reschedulable) {
      warden::RegistryAdd(request, serial);
      return warden::InvalidArg(
          "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not "
          "configured to handle such a flag.");
    }
    request->stats.rescheduled = true;
    request->sink->MarkRescheduled();
  }
  warden::ReleaseRequest(request);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestTrace(TRITONBACKEND_Request* request, TRITONSERVER_InferenceTrace** trace) {
  WARDEN_REQUIRE(request && trace, "TRITONBACKEND_RequestTrace");
  *trace = nullptr;  // Warden does not trace inside backends
  return nullptr;
}

// ---------------------------------------------------------------- inputs

TRITONSERVER_Error* TRITONBACKEND_InputProperties(TRITONBACKEND_Input* input, const char** name,
                                                  TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                  uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count) {
  WARDEN_REQUIRE(input, "TRITONBACKEND_InputProperties");
  Properties(input, name, datatype, shape, dims_count, byte_size, buffer_count);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InputPropertiesForHostPolicy(TRITONBACKEND_Input* input, const char* host_policy_name,
                                                               const char** name, TRITONSERVER_DataType* datatype,
                                                               const int64_t** shape, uint32_t* dims_count,
                                                               uint64_t* byte_size, uint32_t* buffer_count) {
  WARDEN_REQUIRE(input, "TRITONBACKEND_InputPropertiesForHostPolicy");
  (void)host_policy_name;  // no per-policy buffers: the default buffers apply to every policy
  Properties(input, name, datatype, shape, dims_count, byte_size, buffer_count);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InputBuffer(TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
                                              uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id) {
  WARDEN_REQUIRE(input && buffer && buffer_byte_size && memory_type && memory_type_id, "TRITONBACKEND_InputBuffer");
  return Buffer(input, index, buffer, buffer_byte_size, memory_type, memory_type_id);
}

TRITONSERVER_Error* TRITONBACKEND_InputBufferForHostPolicy(TRITONBACKEND_Input* input, const char* host_policy_name,
                                                           const uint32_t index, const void** buffer,
                                                           uint64_t* buffer_byte_size,
                                                           TRITONSERVER_MemoryType* memory_type,
                                                           int64_t* memory_type_id) {
  WARDEN_REQUIRE(input && buffer && buffer_byte_size && memory_type && memory_type_id,
                 "TRITONBACKEND_InputBufferForHostPolicy");
  (void)host_policy_name;
  return Buffer(input, index, buffer, buffer_byte_size, memory_type, memory_type_id);
}

TRITONSERVER_Error* TRITONBACKEND_InputBufferAttributes(TRITONBACKEND_Input* input, const uint32_t index,
                                                        const void** buffer,
                                                        TRITONSERVER_BufferAttributes** buffer_attributes) {
  WARDEN_REQUIRE(input && buffer && buffer_attributes, "TRITONBACKEND_InputBufferAttributes");
  if (index != 0) {
    return warden::InvalidArg("input '" + input->name + "' has 1 buffer, index " + std::to_string(index) +
                              " is out of range");
  }
  if (!input->attributes) {
    input->attributes = std::make_unique<TRITONSERVER_BufferAttributes>();
    input->attributes->byte_size = size_t(input->byte_size);
  }
  *buffer = input->data;
  *buffer_attributes = input->attributes.get();
  return nullptr;
}

}  // extern "C"
