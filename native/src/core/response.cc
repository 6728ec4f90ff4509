// Responses, response factories and outputs (spec §6.3 ResponseFactory/Response, §6.6 ownership,
// §6.7/§6.8 execute and decoupled contracts), and the TRITONSERVER_InferenceResponse accessors
// through which the embedding host reads what a backend sent.
#include <cstdlib>

#include "objects.h"

namespace warden {

Sink::Sink(std::shared_ptr<const ModelInfo> model, std::string request_id, WARDEN_ResponseFn fn, void* userp,
           bool is_cancelled)
    : cancelled(is_cancelled), model_(std::move(model)), request_id_(std::move(request_id)), fn_(fn), userp_(userp) {}

Sink::~Sink() {
  if (final_sent_) return;
  if (rescheduled_) {  // the request runs again: its next run answers (WARDEN_RESPONSE_CLOSED)
    fn_(userp_, nullptr, WARDEN_RESPONSE_CLOSED);
    return;
  }
  // The request was released and every factory and response is gone without a FINAL: the
  // client must not wait forever (a non-conforming backend, spec §6.7.3).
  auto* r = new TRITONSERVER_InferenceResponse;
  r->model = model_;
  r->request_id = request_id_;
  r->error = Internal("backend '" + model_->backend_name + "' released request '" + request_id_ + "' of model '" +
                      model_->name + "' without sending a final response");
  WARDEN_LOG(TRITONSERVER_LOG_ERROR, r->error->message);
  fn_(userp_, r, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
}

TRITONSERVER_Error* Sink::Deliver(TRITONSERVER_InferenceResponse* response, uint32_t flags) {
  std::lock_guard<std::mutex> lk(mu_);
  if (final_sent_) {
    delete response;
    return InvalidArg("the final response of request '" + request_id_ + "' of model '" + model_->name +
                      "' was already sent");
  }
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) final_sent_ = true;
  MergeStagedStates(response, flags);  // implicit state travels with the next delivery (state.cc)
  // Under the lock: responses of one request reach the embedder in the order they were sent.
  fn_(userp_, response, flags);
  return nullptr;
}

void Sink::MarkRescheduled() {
  std::lock_guard<std::mutex> lk(mu_);
  rescheduled_ = true;
}

void Sink::DeliverErrorIfOpen(const TRITONSERVER_Error* error) {
  std::lock_guard<std::mutex> lk(mu_);
  if (final_sent_) return;
  final_sent_ = true;
  auto* r = new TRITONSERVER_InferenceResponse;
  r->model = model_;
  r->request_id = request_id_;
  r->error = CopyError(error);
  fn_(userp_, r, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
}

}  // namespace warden

TRITONBACKEND_Output::~TRITONBACKEND_Output() {
  if (allocator == nullptr) {
    std::free(buffer);
    return;
  }
  if (allocator->release_fn != nullptr && buffer != nullptr) {
    TRITONSERVER_ErrorDelete(
        allocator->release_fn(allocator, buffer, buffer_userp, size_t(byte_size), memory_type, memory_type_id));
  }
}

namespace {

TRITONSERVER_Error* AddParameter(TRITONBACKEND_Response* response, const char* name, warden::ParamValue v,
                                 const char* fn) {
  WARDEN_REQUIRE(response && name, fn);
  v.key = name;
  response->parameters.push_back(std::move(v));
  return nullptr;
}

TRITONSERVER_Error* OutputAt(TRITONSERVER_InferenceResponse* r, uint32_t index, TRITONBACKEND_Output** out) {
  if (index >= r->outputs.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": response has " +
                              std::to_string(r->outputs.size()) + " outputs");
  }
  *out = r->outputs[index].get();
  return nullptr;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- factories

TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryNew(TRITONBACKEND_ResponseFactory** factory,
                                                     TRITONBACKEND_Request* request) {
  WARDEN_REQUIRE(factory && request, "TRITONBACKEND_ResponseFactoryNew");
  *factory = new TRITONBACKEND_ResponseFactory{request->sink};
  request->sink->model()->live->factories++;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryDelete(TRITONBACKEND_ResponseFactory* factory) {
  if (factory != nullptr) factory->sink->model()->live->factories--;
  delete factory;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactorySendFlags(TRITONBACKEND_ResponseFactory* factory,
                                                           const uint32_t send_flags) {
  WARDEN_REQUIRE(factory, "TRITONBACKEND_ResponseFactorySendFlags");
  if ((send_flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) == 0) return nullptr;  // nothing to send
  return factory->sink->Deliver(nullptr, send_flags);
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryIsCancelled(TRITONBACKEND_ResponseFactory* factory,
                                                             bool* is_cancelled) {
  WARDEN_REQUIRE(factory && is_cancelled, "TRITONBACKEND_ResponseFactoryIsCancelled");
  *is_cancelled = factory->sink->cancelled.load();
  return nullptr;
}

// ---------------------------------------------------------------- responses

TRITONSERVER_Error* TRITONBACKEND_ResponseNew(TRITONBACKEND_Response** response, TRITONBACKEND_Request* request) {
  WARDEN_REQUIRE(response && request, "TRITONBACKEND_ResponseNew");
  auto* r = new TRITONBACKEND_Response;
  r->sink = request->sink;
  r->sink->model()->live->responses++;
  *response = r;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseNewFromFactory(TRITONBACKEND_Response** response,
                                                         TRITONBACKEND_ResponseFactory* factory) {
  WARDEN_REQUIRE(response && factory, "TRITONBACKEND_ResponseNewFromFactory");
  auto* r = new TRITONBACKEND_Response;
  r->sink = factory->sink;
  r->sink->model()->live->responses++;
  *response = r;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response* response) {
  if (response != nullptr) response->sink->model()->live->responses--;
  delete response;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetStringParameter(TRITONBACKEND_Response* response, const char* name,
                                                             const char* value) {
  if (value == nullptr) return warden::InvalidArg("TRITONBACKEND_ResponseSetStringParameter: null value");
  return AddParameter(response, name, warden::ParamValue::String(value), "TRITONBACKEND_ResponseSetStringParameter");
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetIntParameter(TRITONBACKEND_Response* response, const char* name,
                                                          const int64_t value) {
  return AddParameter(response, name, warden::ParamValue::Int(value), "TRITONBACKEND_ResponseSetIntParameter");
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetBoolParameter(TRITONBACKEND_Response* response, const char* name,
                                                           const bool value) {
  return AddParameter(response, name, warden::ParamValue::Bool(value), "TRITONBACKEND_ResponseSetBoolParameter");
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetDoubleParameter(TRITONBACKEND_Response* response, const char* name,
                                                             const double value) {
  return AddParameter(response, name, warden::ParamValue::Double(value), "TRITONBACKEND_ResponseSetDoubleParameter");
}

TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
                                                 const char* name, const TRITONSERVER_DataType datatype,
                                                 const int64_t* shape, const uint32_t dims_count) {
  WARDEN_REQUIRE(response && output && name && (shape || dims_count == 0), "TRITONBACKEND_ResponseOutput");
  const warden::ModelInfo& model = *response->sink->model();
  if (model.outputs.count(name) == 0) {
    return warden::InvalidArg(std::string("unexpected inference output '") + name + "' for model '" + model.name + "'");
  }
  for (const auto& o : response->outputs) {
    if (o->name == name) {
      return warden::Err(TRITONSERVER_ERROR_ALREADY_EXISTS,
                         std::string("output '") + name + "' already exists in response");
    }
  }
  if (int(datatype) <= 0 || int(datatype) > TRITONSERVER_TYPE_BF16) {
    return warden::InvalidArg(std::string("invalid datatype for output '") + name + "'");
  }
  auto out = std::make_unique<TRITONBACKEND_Output>();
  out->name = name;
  out->datatype = datatype;
  out->shape.assign(shape, shape + dims_count);
  *output = out.get();
  response->outputs.push_back(std::move(out));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSend(TRITONBACKEND_Response* response, const uint32_t send_flags,
                                               TRITONSERVER_Error* error) {
  WARDEN_REQUIRE(response, "TRITONBACKEND_ResponseSend");
  std::unique_ptr<TRITONBACKEND_Response> owned(response);  // the host always takes the response
  owned->sink->model()->live->responses--;
  auto* r = new TRITONSERVER_InferenceResponse;
  r->model = owned->sink->model();
  r->request_id = owned->sink->request_id();
  if (error != nullptr) {
    r->error = warden::CopyError(error);  // the backend keeps ownership of `error`
  } else {
    r->outputs = std::move(owned->outputs);
    r->parameters = std::move(owned->parameters);
  }
  return owned->sink->Deliver(r, send_flags);
}

TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutput(TRITONBACKEND_Response* response, const uint32_t index,
                                                          const char** name, TRITONSERVER_DataType* datatype,
                                                          const int64_t** shape, uint64_t* dim_count) {
  WARDEN_REQUIRE(response && name && datatype && shape && dim_count, "TRITONBACKEND_InferenceResponseOutput");
  if (index >= response->outputs.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": response has " +
                              std::to_string(response->outputs.size()) + " outputs");
  }
  const auto& o = response->outputs[index];
  *name = o->name.c_str();
  *datatype = o->datatype;
  *shape = o->shape.data();
  *dim_count = o->shape.size();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutputByName(TRITONBACKEND_Response* response, const char* name,
                                                                TRITONSERVER_DataType* datatype, const int64_t** shape,
                                                                uint64_t* dim_count) {
  WARDEN_REQUIRE(response && name && datatype && shape && dim_count, "TRITONBACKEND_InferenceResponseOutputByName");
  for (const auto& o : response->outputs) {
    if (o->name == name) {
      *datatype = o->datatype;
      *shape = o->shape.data();
      *dim_count = o->shape.size();
      return nullptr;
    }
  }
  return warden::Err(TRITONSERVER_ERROR_NOT_FOUND, std::string("output name '") + name + "' not found in response");
}

// ---------------------------------------------------------------- outputs

TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(TRITONBACKEND_Output* output, void** buffer,
                                               const uint64_t buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                               int64_t* memory_type_id) {
  WARDEN_REQUIRE(output && buffer && memory_type && memory_type_id, "TRITONBACKEND_OutputBuffer");
  if (output->allocated) {
    return warden::Err(TRITONSERVER_ERROR_ALREADY_EXISTS,
                       "a buffer was already allocated for output '" + output->name + "'");
  }
  void* p = warden::AllocCpu(buffer_byte_size);
  if (p == nullptr) {
    return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE, "unable to allocate " + std::to_string(buffer_byte_size) +
                                                           " bytes for output '" + output->name + "'");
  }
  output->buffer = p;
  output->byte_size = buffer_byte_size;
  output->allocated = true;
  *buffer = p;
  *memory_type = TRITONSERVER_MEMORY_CPU;  // CPU is always acceptable to a backend
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_OutputBufferAttributes(TRITONBACKEND_Output* output,
                                                         TRITONSERVER_BufferAttributes** buffer_attributes) {
  WARDEN_REQUIRE(output && buffer_attributes, "TRITONBACKEND_OutputBufferAttributes");
  if (!output->allocated) {
    return warden::InvalidArg(
        "TRITONBACKEND_OutputBuffer must be called before "
        "TRITONBACKEND_OutputBufferAttributes for output '" +
        output->name + "'");
  }
  if (!output->attributes) {
    output->attributes = std::make_unique<TRITONSERVER_BufferAttributes>();
    output->attributes->byte_size = size_t(output->byte_size);
  }
  *buffer_attributes = output->attributes.get();
  return nullptr;
}

// ---------------------------------------------------------------- delivered responses

TRITONSERVER_Error* TRITONSERVER_InferenceResponseDelete(TRITONSERVER_InferenceResponse* r) {
  delete r;
  return nullptr;
}

// A new error object the caller owns and deletes (spec §6: Triton's core returns a fresh copy of
// the response status; python_backend's request executor deletes it, and deletes the response
// too — handing out the response's own error would be freed twice).
TRITONSERVER_Error* TRITONSERVER_InferenceResponseError(TRITONSERVER_InferenceResponse* r) {
  if (r == nullptr || r->error == nullptr) return nullptr;
  return TRITONSERVER_ErrorNew(TRITONSERVER_ErrorCode(r->error), TRITONSERVER_ErrorMessage(r->error));
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseModel(TRITONSERVER_InferenceResponse* r, const char** model_name,
                                                        int64_t* model_version) {
  WARDEN_REQUIRE(r && model_name && model_version, "TRITONSERVER_InferenceResponseModel");
  *model_name = r->model->name.c_str();
  *model_version = r->model->version;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseId(TRITONSERVER_InferenceResponse* r, const char** request_id) {
  WARDEN_REQUIRE(r && request_id, "TRITONSERVER_InferenceResponseId");
  *request_id = r->request_id.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameterCount(TRITONSERVER_InferenceResponse* r, uint32_t* count) {
  WARDEN_REQUIRE(r && count, "TRITONSERVER_InferenceResponseParameterCount");
  *count = uint32_t(r->parameters.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameter(TRITONSERVER_InferenceResponse* r, const uint32_t index,
                                                            const char** name, TRITONSERVER_ParameterType* type,
                                                            const void** vvalue) {
  WARDEN_REQUIRE(r && name && type && vvalue, "TRITONSERVER_InferenceResponseParameter");
  if (index >= r->parameters.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": response has " +
                              std::to_string(r->parameters.size()) + " parameters");
  }
  const warden::ParamValue& p = r->parameters[index];
  *name = p.key.c_str();
  *type = p.type;
  *vvalue = p.VValue();
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputCount(TRITONSERVER_InferenceResponse* r, uint32_t* count) {
  WARDEN_REQUIRE(r && count, "TRITONSERVER_InferenceResponseOutputCount");
  *count = uint32_t(r->outputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutput(TRITONSERVER_InferenceResponse* r, const uint32_t index,
                                                         const char** name, TRITONSERVER_DataType* datatype,
                                                         const int64_t** shape, uint64_t* dim_count, const void** base,
                                                         size_t* byte_size, TRITONSERVER_MemoryType* memory_type,
                                                         int64_t* memory_type_id, void** userp) {
  WARDEN_REQUIRE(r, "TRITONSERVER_InferenceResponseOutput");
  TRITONBACKEND_Output* o = nullptr;
  if (TRITONSERVER_Error* err = OutputAt(r, index, &o)) return err;
  if (name != nullptr) *name = o->name.c_str();
  if (datatype != nullptr) *datatype = o->datatype;
  if (shape != nullptr) *shape = o->shape.data();
  if (dim_count != nullptr) *dim_count = o->shape.size();
  if (base != nullptr) *base = o->buffer;
  if (byte_size != nullptr) *byte_size = size_t(o->byte_size);
  if (memory_type != nullptr) *memory_type = o->memory_type;
  if (memory_type_id != nullptr) *memory_type_id = o->memory_type_id;
  if (userp != nullptr) *userp = o->buffer_userp;  // the allocator's buffer_userp, if any
  return nullptr;
}

void* WARDEN_InferenceResponseOutputTakeBuffer(TRITONSERVER_InferenceResponse* r, uint32_t index) {
  if (r == nullptr || index >= r->outputs.size()) return nullptr;
  TRITONBACKEND_Output* o = r->outputs[index].get();
  if (o->allocator != nullptr) return nullptr;  // the allocator's buffer is not ours to give
  void* p = o->buffer;
  o->buffer = nullptr;
  return p;
}

}  // extern "C"
