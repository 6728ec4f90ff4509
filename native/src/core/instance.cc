// Model instances: worker threads and execution policy (spec §6.2), execute (spec §6.7),
// TRITONBACKEND_ModelInstance* accessors and statistics (spec §6.3).
#include "objects.h"

namespace {

std::shared_ptr<warden::Worker> WorkerFor(TRITONBACKEND_Model* model, TRITONSERVER_InstanceGroupKind kind,
                                          int32_t device_id, const std::string& instance_name) {
  TRITONBACKEND_Backend* be = model->backend;
  if (be->execution_policy.load() != TRITONBACKEND_EXECUTION_DEVICE_BLOCKING) {
    return std::make_shared<warden::Worker>("w:" + instance_name);
  }
  // DEVICE_BLOCKING: instances of this backend on one device share one thread.
  std::lock_guard<std::mutex> lk(be->workers_mu);
  auto key = std::make_pair(int(kind), int(device_id));
  std::shared_ptr<warden::Worker> w = be->device_workers[key].lock();
  if (!w) {
    w = std::make_shared<warden::Worker>("wd:" + be->name + std::to_string(device_id));
    be->device_workers[key] = w;
  }
  return w;
}

TRITONSERVER_Error* CallInstanceFn(TRITONBACKEND_Backend::InstanceFn fn, TRITONBACKEND_ModelInstance* inst,
                                   const char* what) {
  try {
    return fn(inst);
  } catch (...) {
    return warden::EscapedException(inst->model->backend->name, what);
  }
}

const char* kInstanceFns[] = {"TRITONBACKEND_ModelInstanceInitialize", "TRITONBACKEND_ModelInstanceFinalize"};

}  // namespace

extern "C" {

TRITONSERVER_Error* WARDEN_InstanceNew(TRITONBACKEND_Model* model, const WARDEN_InstanceDesc* desc,
                                       TRITONBACKEND_ModelInstance** instance) {
  if (model == nullptr || desc == nullptr || instance == nullptr || desc->name == nullptr ||
      (desc->profiles == nullptr && desc->profile_count > 0) ||
      ((desc->secondary_device_kinds == nullptr || desc->secondary_device_ids == nullptr) &&
       desc->secondary_device_count > 0)) {
    return warden::InvalidArg("WARDEN_InstanceNew: null argument");
  }
  if (desc->kind == TRITONSERVER_INSTANCEGROUPKIND_GPU) {
    return warden::InvalidArg("instance '" + std::string(desc->name) + "' of model '" + model->name +
                              "' has kind KIND_GPU, but Warden's native backend host has no CUDA "
                              "support; use KIND_CPU or KIND_MODEL");
  }
  auto inst = std::make_unique<TRITONBACKEND_ModelInstance>();
  inst->model = model;
  inst->name = desc->name;
  inst->kind = desc->kind;
  inst->device_id = desc->device_id;
  std::string policy = desc->host_policy_name == nullptr ? "cpu" : desc->host_policy_name;
  std::string escaped;
  for (char c : policy) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) escaped += c;
  }
  inst->host_policy.json = "{\"" + escaped + "\":{}}";
  inst->passive = desc->passive;
  for (uint32_t i = 0; i < desc->profile_count; ++i) {
    inst->profiles.emplace_back(desc->profiles[i] == nullptr ? "" : desc->profiles[i]);
  }
  for (uint32_t i = 0; i < desc->secondary_device_count; ++i) {
    inst->secondary_devices.emplace_back(
        desc->secondary_device_kinds[i] == nullptr ? "" : desc->secondary_device_kinds[i],
        desc->secondary_device_ids[i]);
  }
  inst->worker = WorkerFor(model, desc->kind, desc->device_id, inst->name);
  model->live_instances++;
  *instance = inst.release();
  return nullptr;
}

void WARDEN_InstanceInitialize(TRITONBACKEND_ModelInstance* instance, WARDEN_DoneFn done, void* userp) {
  instance->worker->Post([instance, done, userp] {
    TRITONSERVER_Error* err = nullptr;
    TRITONBACKEND_Backend* be = instance->model->backend;
    if (be->instance_initialize != nullptr) {
      err = CallInstanceFn(be->instance_initialize, instance, kInstanceFns[0]);
    }
    // Initialize was called (whether or not it succeeded): Triton then always calls Finalize, so
    // a backend can release what a failed Initialize left behind (shared memory, processes).
    instance->initialized = true;
    done(userp, err);
  });
}

void WARDEN_InstanceFinalize(TRITONBACKEND_ModelInstance* instance, WARDEN_DoneFn done, void* userp) {
  instance->worker->Post([instance, done, userp] {
    TRITONSERVER_Error* err = nullptr;
    TRITONBACKEND_Backend* be = instance->model->backend;
    if (instance->initialized && be->instance_finalize != nullptr) {  // after any Initialize call
      err = CallInstanceFn(be->instance_finalize, instance, kInstanceFns[1]);
    }
    instance->initialized = false;
    done(userp, err);
  });
}

void WARDEN_InstanceDelete(TRITONBACKEND_ModelInstance* instance) {
  if (instance == nullptr) return;
  instance->model->live_instances--;
  instance->worker.reset();  // joins the thread unless another instance shares it
  delete instance;
}

TRITONSERVER_Error* WARDEN_InstanceReady(TRITONBACKEND_ModelInstance* instance) {
  if (instance == nullptr) return warden::InvalidArg("WARDEN_InstanceReady: null instance");
  TRITONBACKEND_Backend* be = instance->model->backend;
  if (be->instance_ready == nullptr) return nullptr;
  return CallInstanceFn(be->instance_ready, instance, "TRITONBACKEND_ModelInstanceReady");
}

TRITONSERVER_Error* WARDEN_InstanceExecute(TRITONBACKEND_ModelInstance* instance, const WARDEN_RequestDesc* requests,
                                           uint32_t count, WARDEN_ExecDoneFn done, void* userp) {
  if (instance == nullptr || requests == nullptr || count == 0 || done == nullptr) {
    return warden::InvalidArg("WARDEN_InstanceExecute: empty batch or null argument");
  }
  // Validate everything before building anything: a failed submit delivers nothing.
  for (uint32_t r = 0; r < count; ++r) {
    const WARDEN_RequestDesc& d = requests[r];
    if (d.response_fn == nullptr || d.release_fn == nullptr || (d.inputs == nullptr && d.input_count > 0) ||
        (d.requested_outputs == nullptr && d.requested_output_count > 0) ||
        (d.parameters == nullptr && d.parameter_count > 0)) {
      return warden::InvalidArg("WARDEN_InstanceExecute: request " + std::to_string(r) + " has a null field");
    }
    for (uint32_t i = 0; i < d.input_count; ++i) {
      const WARDEN_InputDesc& in = d.inputs[i];
      if (in.name == nullptr || (in.shape == nullptr && in.dims_count > 0) ||
          (in.data == nullptr && in.byte_size > 0)) {
        return warden::InvalidArg("WARDEN_InstanceExecute: input " + std::to_string(i) + " of request " +
                                  std::to_string(r) + " has a null field");
      }
    }
    for (uint32_t i = 0; i < d.requested_output_count; ++i) {
      if (d.requested_outputs[i] == nullptr) {
        return warden::InvalidArg("WARDEN_InstanceExecute: null requested output name");
      }
    }
    for (uint32_t i = 0; i < d.parameter_count; ++i) {
      if (d.parameters[i].key == nullptr ||
          (d.parameters[i].type == TRITONSERVER_PARAMETER_STRING && d.parameters[i].string_value == nullptr)) {
        return warden::InvalidArg("WARDEN_InstanceExecute: parameter with a null key or value");
      }
    }
  }
  std::shared_ptr<const warden::ModelInfo> info;
  {
    std::lock_guard<std::mutex> lk(instance->model->mu);
    info = instance->model->info;
  }
  static const char kEmpty = 0;
  auto batch = std::make_shared<std::vector<TRITONBACKEND_Request*>>();
  auto serials = std::make_shared<std::vector<uint64_t>>();
  batch->reserve(count);
  serials->reserve(count);
  for (uint32_t r = 0; r < count; ++r) {
    const WARDEN_RequestDesc& d = requests[r];
    auto* req = new TRITONBACKEND_Request;
    req->serial = warden::NextSerial();
    req->instance = instance;
    req->id = d.id == nullptr ? "" : d.id;
    req->correlation_is_string = d.correlation_id_string != nullptr;
    req->correlation_id = d.correlation_id;
    req->correlation_id_string = req->correlation_is_string ? d.correlation_id_string : "";
    req->flags = d.flags;
    req->timeout_us = d.timeout_us;
    req->priority = d.priority;
    req->inputs.resize(d.input_count);
    for (uint32_t i = 0; i < d.input_count; ++i) {
      const WARDEN_InputDesc& in = d.inputs[i];
      TRITONBACKEND_Input& dst = req->inputs[i];
      dst.name = in.name;
      dst.datatype = in.datatype;
      dst.shape.assign(in.shape, in.shape + in.dims_count);
      // Never hand a backend a null buffer, even for an empty tensor.
      dst.data = in.data == nullptr ? static_cast<const void*>(&kEmpty) : in.data;
      dst.byte_size = in.byte_size;
    }
    req->requested_outputs.assign(d.requested_outputs, d.requested_outputs + d.requested_output_count);
    req->parameters.resize(d.parameter_count);
    for (uint32_t i = 0; i < d.parameter_count; ++i) {
      const WARDEN_ParamDesc& p = d.parameters[i];
      warden::ParamValue& v = req->parameters[i];
      v.key = p.key;
      v.type = p.type;
      if (p.type == TRITONSERVER_PARAMETER_STRING) v.string_value = p.string_value;
      v.int_value = p.int_value;
      v.bool_value = p.bool_value;
      v.double_value = p.double_value;
    }
    req->sink = std::make_shared<warden::Sink>(info, req->id, d.response_fn, d.userp, d.cancelled);
    req->release_fn = d.release_fn;
    req->userp = d.userp;
    req->reschedulable = d.reschedulable;
    warden::RegistryAdd(req, req->serial);
    batch->push_back(req);
    serials->push_back(req->serial);
  }
  instance->worker->Post([instance, batch, serials, done, userp] {
    {
      std::lock_guard<std::mutex> lk(instance->stats_mu);
      instance->exec_stats = WARDEN_ExecStats{};
    }
    TRITONBACKEND_Backend* be = instance->model->backend;
    TRITONSERVER_Error* err = nullptr;
    try {
      err = be->instance_execute(instance, batch->data(), uint32_t(batch->size()));
    } catch (...) {
      err = warden::EscapedException(be->name, "TRITONBACKEND_ModelInstanceExecute");
    }
    const uint64_t returned_ns = warden::NowNs();
    if (err != nullptr) {
      // The host keeps ownership (spec §6.7.2): the error is every request's response.
      for (size_t i = 0; i < batch->size(); ++i) {
        TRITONBACKEND_Request* req = (*batch)[i];
        if (warden::RegistryTake(req, &(*serials)[i])) {
          req->sink->DeliverErrorIfOpen(err);
          warden::ReleaseRequest(req);
        }
      }
    }
    WARDEN_ExecStats stats;
    {
      std::lock_guard<std::mutex> lk(instance->stats_mu);
      stats = instance->exec_stats;
    }
    stats.returned_ns = returned_ns;
    done(userp, err, &stats);
  });
  return nullptr;
}

// ---------------------------------------------------------------- TRITONBACKEND_ModelInstance*

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance, const char** name) {
  WARDEN_REQUIRE(instance && name, "TRITONBACKEND_ModelInstanceName");
  *name = instance->name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(TRITONBACKEND_ModelInstance* instance,
                                                    TRITONSERVER_InstanceGroupKind* kind) {
  WARDEN_REQUIRE(instance && kind, "TRITONBACKEND_ModelInstanceKind");
  *kind = instance->kind;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance* instance, int32_t* device_id) {
  WARDEN_REQUIRE(instance && device_id, "TRITONBACKEND_ModelInstanceDeviceId");
  *device_id = instance->device_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceHostPolicy(TRITONBACKEND_ModelInstance* instance,
                                                          TRITONSERVER_Message** host_policy) {
  WARDEN_REQUIRE(instance && host_policy, "TRITONBACKEND_ModelInstanceHostPolicy");
  *host_policy = &instance->host_policy;  // host-owned
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceIsPassive(TRITONBACKEND_ModelInstance* instance, bool* is_passive) {
  WARDEN_REQUIRE(instance && is_passive, "TRITONBACKEND_ModelInstanceIsPassive");
  *is_passive = instance->passive;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileCount(TRITONBACKEND_ModelInstance* instance, uint32_t* count) {
  WARDEN_REQUIRE(instance && count, "TRITONBACKEND_ModelInstanceProfileCount");
  *count = uint32_t(instance->profiles.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileName(TRITONBACKEND_ModelInstance* instance, const uint32_t index,
                                                           const char** profile_name) {
  WARDEN_REQUIRE(instance && profile_name, "TRITONBACKEND_ModelInstanceProfileName");
  if (index >= instance->profiles.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": instance is configured with " +
                              std::to_string(instance->profiles.size()) + " profiles");
  }
  *profile_name = instance->profiles[index].c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceCount(TRITONBACKEND_ModelInstance* instance,
                                                                    uint32_t* count) {
  WARDEN_REQUIRE(instance && count, "TRITONBACKEND_ModelInstanceSecondaryDeviceCount");
  *count = uint32_t(instance->secondary_devices.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceProperties(TRITONBACKEND_ModelInstance* instance,
                                                                         uint32_t index, const char** kind,
                                                                         int64_t* id) {
  WARDEN_REQUIRE(instance && kind && id, "TRITONBACKEND_ModelInstanceSecondaryDeviceProperties");
  if (index >= instance->secondary_devices.size()) {
    return warden::InvalidArg("out of bounds index " + std::to_string(index) + ": instance is configured with " +
                              std::to_string(instance->secondary_devices.size()) + " secondary devices");
  }
  *kind = instance->secondary_devices[index].first.c_str();
  *id = instance->secondary_devices[index].second;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Model** model) {
  WARDEN_REQUIRE(instance && model, "TRITONBACKEND_ModelInstanceModel");
  *model = instance->model;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state) {
  WARDEN_REQUIRE(instance && state, "TRITONBACKEND_ModelInstanceState");
  *state = instance->state.load();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state) {
  WARDEN_REQUIRE(instance, "TRITONBACKEND_ModelInstanceSetState");
  instance->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportMemoryUsage(TRITONBACKEND_ModelInstance* instance,
                                                                 TRITONSERVER_BufferAttributes** usage,
                                                                 uint32_t usage_size) {
  WARDEN_REQUIRE(instance && (usage || usage_size == 0), "TRITONBACKEND_ModelInstanceReportMemoryUsage");
  return nullptr;  // accepted; not reported further yet
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(TRITONBACKEND_ModelInstance* instance,
                                                                TRITONBACKEND_Request* request, const bool success,
                                                                const uint64_t exec_start_ns,
                                                                const uint64_t compute_start_ns,
                                                                const uint64_t compute_end_ns,
                                                                const uint64_t exec_end_ns) {
  WARDEN_REQUIRE(instance && request, "TRITONBACKEND_ModelInstanceReportStatistics");
  request->stats = WARDEN_RequestStats{true, success, exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns};
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns) {
  WARDEN_REQUIRE(instance, "TRITONBACKEND_ModelInstanceReportBatchStatistics");
  std::lock_guard<std::mutex> lk(instance->stats_mu);
  instance->exec_stats =
      WARDEN_ExecStats{true, batch_size, exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns};
  return nullptr;
}

// ---------------------------------------------------------------- per-response statistics

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsNew(
    TRITONBACKEND_ModelInstanceResponseStatistics** response_statistics) {
  WARDEN_REQUIRE(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsNew");
  *response_statistics = new TRITONBACKEND_ModelInstanceResponseStatistics;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsDelete(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics) {
  delete response_statistics;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, TRITONBACKEND_ModelInstance* model_instance) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance");
  s->instance = model_instance;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, TRITONBACKEND_ResponseFactory* factory) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory");
  s->factory = factory;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, uint64_t response_start) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart");
  s->response_start = response_start;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, uint64_t compute_output_start) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart");
  s->compute_output_start = compute_output_start;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, uint64_t response_end) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd");
  s->response_end = response_end;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetError(
    TRITONBACKEND_ModelInstanceResponseStatistics* s, TRITONSERVER_Error* error) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceResponseStatisticsSetError");
  s->has_error = error != nullptr;  // not owned
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstanceResponseStatistics* s) {
  WARDEN_REQUIRE(s, "TRITONBACKEND_ModelInstanceReportResponseStatistics");
  if (s->instance == nullptr || s->factory == nullptr) {
    return warden::InvalidArg("response statistics need a model instance and a response factory");
  }
  return nullptr;  // accepted; per-response statistics are not aggregated yet
}

}  // extern "C"
