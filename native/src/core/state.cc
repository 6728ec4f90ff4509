// Implicit state for sequence backends (spec §5.6 `sequence_batching.state`, §6 TRITONBACKEND_State*).
//
// The host's sequence batcher feeds a sequence's state as the input named by a state's
// `input_name` and asks for the `output_name` of every state as a requested output of the
// request. A backend writes the next state through TRITONBACKEND_StateNew (on one of those
// output names), TRITONBACKEND_StateBuffer (the bytes) and TRITONBACKEND_StateUpdate (commit).
// A committed state travels with the request's next delivery (a response, or a flags-only FINAL,
// which then carries a response holding only states); the batcher takes it out of that response
// and keeps it as the sequence's state. So a backend must update the state before it sends the
// request's FINAL response; an update after it is refused (INVALID_ARG). Without an update the
// sequence keeps its state, as in Triton.
//
// State objects are owned by their request and freed when it is released.
#include <cstdlib>
#include <cstring>

#include "objects.h"

struct TRITONBACKEND_State {
  std::shared_ptr<warden::Sink> sink;
  std::string name;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  /** Bytes the shape needs (fixed-size datatypes); BYTES states take any size. */
  uint64_t expected_bytes = 0;
  bool fixed_size = true;
  void* buffer = nullptr;  // AllocCpu'd, freed with the state
  uint64_t byte_size = 0;
  bool allocated = false;
  std::unique_ptr<TRITONSERVER_BufferAttributes> attributes;
  ~TRITONBACKEND_State() { std::free(buffer); }
};

namespace {

constexpr uint32_t kMaxStateDims = 64;

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

namespace warden {

TRITONSERVER_Error* Sink::StageState(std::unique_ptr<TRITONBACKEND_Output> state) {
  std::lock_guard<std::mutex> lk(mu_);
  if (final_sent_) {
    return InvalidArg("the state '" + state->name + "' of request '" + request_id_ + "' of model '" + model_->name +
                      "' cannot be updated after the request's final response was sent");
  }
  for (auto& s : staged_states_) {
    if (s->name == state->name) {
      s = std::move(state);
      return nullptr;
    }
  }
  staged_states_.push_back(std::move(state));
  return nullptr;
}

void Sink::MergeStagedStates(TRITONSERVER_InferenceResponse*& response, uint32_t flags) {
  if (staged_states_.empty()) return;
  const bool final = (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0;
  if (response == nullptr) {
    if (!final) return;  // kept for the next delivery
    response = new TRITONSERVER_InferenceResponse;
    response->model = model_;
    response->request_id = request_id_;
  } else if (response->error != nullptr) {
    if (final) staged_states_.clear();  // a failed request does not move its sequence's state
    return;
  }
  for (auto& s : staged_states_) {
    auto& outs = response->outputs;
    for (auto it = outs.begin(); it != outs.end(); ++it) {
      if ((*it)->name == s->name) {
        outs.erase(it);
        break;
      }
    }
    outs.push_back(std::move(s));
  }
  staged_states_.clear();
}

}  // namespace warden

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_StateNew(TRITONBACKEND_State** state, TRITONBACKEND_Request* request,
                                           const char* name, const TRITONSERVER_DataType datatype, const int64_t* shape,
                                           const uint32_t dims_count) {
  WARDEN_REQUIRE(state && request && name && (shape || dims_count == 0), "TRITONBACKEND_StateNew");
  if (!request->sink) return warden::InvalidArg("TRITONBACKEND_StateNew: the request was released");
  const warden::ModelInfo& model = *request->sink->model();
  bool requested = false;
  for (const auto& o : request->requested_outputs) requested = requested || o == name;
  // The batcher requests every state's output_name; a model output is never a state.
  if (!requested || model.outputs.count(name) != 0) {
    return warden::InvalidArg(std::string("state '") + name + "' is not a valid state of model '" + model.name +
                              "': a state is the output_name of a " +
                              "sequence_batching state, requested by the sequence batcher");
  }
  if (int(datatype) <= 0 || int(datatype) > TRITONSERVER_TYPE_BF16) {
    return warden::InvalidArg(std::string("invalid datatype for state '") + name + "'");
  }
  if (dims_count > kMaxStateDims) {
    return warden::InvalidArg(std::string("state '") + name + "' has " + std::to_string(dims_count) +
                              " dimensions, more than " + std::to_string(kMaxStateDims));
  }
  auto s = std::make_shared<TRITONBACKEND_State>();
  s->sink = request->sink;
  s->name = name;
  s->datatype = datatype;
  s->shape.assign(shape, shape + dims_count);
  const uint32_t element_size = TRITONSERVER_DataTypeByteSize(datatype);
  s->fixed_size = element_size != 0;
  uint64_t bytes = element_size;
  for (int64_t d : s->shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes)) {
      return warden::InvalidArg(std::string("invalid shape ") + ShapeText(s->shape) + " for state '" + name + "'");
    }
  }
  s->expected_bytes = bytes;
  *state = s.get();
  request->states.push_back(std::move(s));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateBuffer(TRITONBACKEND_State* state, void** buffer,
                                              const uint64_t buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
                                              int64_t* memory_type_id) {
  WARDEN_REQUIRE(state && buffer && memory_type && memory_type_id, "TRITONBACKEND_StateBuffer");
  if (state->allocated) {
    return warden::Err(TRITONSERVER_ERROR_ALREADY_EXISTS,
                       "a buffer was already allocated for state '" + state->name + "'");
  }
  if (state->fixed_size && buffer_byte_size != state->expected_bytes) {
    return warden::InvalidArg("state '" + state->name + "' of shape " + ShapeText(state->shape) + " and type " +
                              TRITONSERVER_DataTypeString(state->datatype) + " needs " +
                              std::to_string(state->expected_bytes) + " bytes, got a request for " +
                              std::to_string(buffer_byte_size));
  }
  void* p = warden::AllocCpu(buffer_byte_size);
  if (p == nullptr) {
    return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE, "unable to allocate " + std::to_string(buffer_byte_size) +
                                                           " bytes for state '" + state->name + "'");
  }
  state->buffer = p;
  state->byte_size = buffer_byte_size;
  state->allocated = true;
  *buffer = p;
  *memory_type = TRITONSERVER_MEMORY_CPU;  // CPU is always acceptable to a backend
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateBufferAttributes(TRITONBACKEND_State* state,
                                                        TRITONSERVER_BufferAttributes** buffer_attributes) {
  WARDEN_REQUIRE(state && buffer_attributes, "TRITONBACKEND_StateBufferAttributes");
  if (!state->attributes) state->attributes = std::make_unique<TRITONSERVER_BufferAttributes>();
  state->attributes->memory_type = TRITONSERVER_MEMORY_CPU;
  state->attributes->memory_type_id = 0;
  state->attributes->byte_size = state->byte_size;
  *buffer_attributes = state->attributes.get();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateUpdate(TRITONBACKEND_State* state) {
  WARDEN_REQUIRE(state, "TRITONBACKEND_StateUpdate");
  if (!state->allocated && !(state->fixed_size && state->expected_bytes == 0)) {
    return warden::InvalidArg("no buffer was allocated for state '" + state->name +
                              "' (TRITONBACKEND_StateBuffer) before TRITONBACKEND_StateUpdate");
  }
  // A copy: the backend may keep writing its buffer until the request is released.
  auto out = std::make_unique<TRITONBACKEND_Output>();
  out->name = state->name;
  out->datatype = state->datatype;
  out->shape = state->shape;
  out->byte_size = state->byte_size;
  out->buffer = warden::AllocCpu(state->byte_size);
  if (out->buffer == nullptr) {
    return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE, "unable to allocate " + std::to_string(state->byte_size) +
                                                           " bytes for state '" + state->name + "'");
  }
  if (state->byte_size > 0) std::memcpy(out->buffer, state->buffer, state->byte_size);
  out->allocated = true;
  return state->sink->StageState(std::move(out));
}

}  // extern "C"
