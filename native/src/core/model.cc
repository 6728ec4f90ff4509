// Models: load/unload in Triton's order (spec §6.2), TRITONBACKEND_Model* accessors, config and
// auto-complete (spec §5.7, §6.3).
#include "objects.h"

namespace {

std::shared_ptr<const warden::ModelInfo> MakeInfo(const TRITONBACKEND_Model* model, const char* const* output_names,
                                                  uint32_t output_count, bool decoupled) {
  auto info = std::make_shared<warden::ModelInfo>();
  info->backend_name = model->backend->name;
  info->name = model->name;
  info->version = int64_t(model->version);
  for (uint32_t i = 0; i < output_count; ++i) {
    if (output_names[i] != nullptr) info->outputs.insert(output_names[i]);
  }
  info->decoupled = decoupled;
  info->live = model->live;
  return info;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* WARDEN_ModelLoad(TRITONBACKEND_Backend* backend, const WARDEN_ModelDesc* desc,
                                     TRITONBACKEND_Model** model) {
  if (backend == nullptr || desc == nullptr || model == nullptr || desc->name == nullptr ||
      desc->config_json == nullptr || (desc->output_names == nullptr && desc->output_count > 0)) {
    return warden::InvalidArg("WARDEN_ModelLoad: null argument");
  }
  auto m = std::make_unique<TRITONBACKEND_Model>();
  m->backend = backend;
  m->name = desc->name;
  m->version = desc->version;
  m->repository_path = desc->repository_path == nullptr ? "" : desc->repository_path;
  m->auto_complete_config = desc->auto_complete_config;
  m->config_json = desc->config_json;
  m->info = MakeInfo(m.get(), desc->output_names, desc->output_count, desc->decoupled);
  m->server.state->owner = desc->server_owner;
  m->server.state->model_name = m->name;
  if (backend->model_initialize != nullptr) {
    m->in_initialize = true;
    TRITONSERVER_Error* err = nullptr;
    try {
      err = backend->model_initialize(m.get());
    } catch (...) {
      err = warden::EscapedException(backend->name, "TRITONBACKEND_ModelInitialize");
    }
    m->in_initialize = false;
    if (err != nullptr) return err;  // Triton does not call ModelFinalize after a failed init
  }
  backend->live_models++;
  *model = m.release();
  return nullptr;
}

const char* WARDEN_ModelSetConfigJson(TRITONBACKEND_Model* model) {
  if (model == nullptr) return nullptr;
  std::lock_guard<std::mutex> lk(model->mu);
  return model->has_set_config ? model->set_config_json.c_str() : nullptr;
}

TRITONSERVER_Error* WARDEN_ModelUpdateConfig(TRITONBACKEND_Model* model, const char* config_json,
                                             const char* const* output_names, uint32_t output_count, bool decoupled) {
  if (model == nullptr || config_json == nullptr || (output_names == nullptr && output_count > 0)) {
    return warden::InvalidArg("WARDEN_ModelUpdateConfig: null argument");
  }
  auto info = MakeInfo(model, output_names, output_count, decoupled);
  std::lock_guard<std::mutex> lk(model->mu);
  model->config_json = config_json;
  model->info = std::move(info);
  return nullptr;
}

TRITONSERVER_Error* WARDEN_ModelUnload(TRITONBACKEND_Model* model) {
  if (model == nullptr) return warden::InvalidArg("WARDEN_ModelUnload: null model");
  if (model->live_instances.load() != 0) {
    return warden::Err(
        TRITONSERVER_ERROR_UNAVAILABLE,
        "model '" + model->name + "' still has " + std::to_string(model->live_instances.load()) + " instance(s)");
  }
  TRITONSERVER_Error* err = nullptr;
  TRITONBACKEND_Backend* backend = model->backend;
  if (backend->model_finalize != nullptr) {
    try {
      err = backend->model_finalize(model);
    } catch (...) {
      err = warden::EscapedException(backend->name, "TRITONBACKEND_ModelFinalize");
    }
  }
  backend->live_models--;
  delete model;
  return err;
}

void WARDEN_ModelLiveObjects(TRITONBACKEND_Model* model, int64_t* responses, int64_t* factories) {
  if (model == nullptr) return;
  if (responses != nullptr) *responses = model->live->responses.load();
  if (factories != nullptr) *factories = model->live->factories.load();
}

// ---------------------------------------------------------------- TRITONBACKEND_Model*

TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name) {
  WARDEN_REQUIRE(model && name, "TRITONBACKEND_ModelName");
  *name = model->name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version) {
  WARDEN_REQUIRE(model && version, "TRITONBACKEND_ModelVersion");
  *version = model->version;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelRepository(TRITONBACKEND_Model* model, TRITONBACKEND_ArtifactType* artifact_type,
                                                  const char** location) {
  WARDEN_REQUIRE(model && artifact_type && location, "TRITONBACKEND_ModelRepository");
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->repository_path.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                              TRITONSERVER_Message** model_config) {
  WARDEN_REQUIRE(model && model_config, "TRITONBACKEND_ModelConfig");
  if (config_version != 1) {
    return warden::Unsupported("model configuration version " + std::to_string(config_version) +
                               " is not supported, supported versions are: 1");
  }
  std::lock_guard<std::mutex> lk(model->mu);
  *model_config = new TRITONSERVER_Message{model->config_json};  // caller deletes
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model, bool* auto_complete_config) {
  WARDEN_REQUIRE(model && auto_complete_config, "TRITONBACKEND_ModelAutoCompleteConfig");
  *auto_complete_config = model->auto_complete_config;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(TRITONBACKEND_Model* model, const uint32_t config_version,
                                                 TRITONSERVER_Message* model_config) {
  WARDEN_REQUIRE(model && model_config, "TRITONBACKEND_ModelSetConfig");
  if (config_version != 1) {
    return warden::Unsupported("model configuration version " + std::to_string(config_version) +
                               " is not supported, supported versions are: 1");
  }
  if (!model->in_initialize.load()) {
    return warden::Unsupported("TRITONBACKEND_ModelSetConfig is only supported inside TRITONBACKEND_ModelInitialize");
  }
  std::lock_guard<std::mutex> lk(model->mu);
  // Copied; the host merges the auto-completable fields and re-normalises after ModelInitialize.
  model->has_set_config = true;
  model->set_config_json = model_config->json;
  model->config_json = model_config->json;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelServer(TRITONBACKEND_Model* model, TRITONSERVER_Server** server) {
  WARDEN_REQUIRE(model && server, "TRITONBACKEND_ModelServer");
  *server = &model->server;  // one per model: carries its owner (spec §6.4, inference.cc)
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model, TRITONBACKEND_Backend** backend) {
  WARDEN_REQUIRE(model && backend, "TRITONBACKEND_ModelBackend");
  *backend = model->backend;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state) {
  WARDEN_REQUIRE(model && state, "TRITONBACKEND_ModelState");
  *state = model->state.load();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state) {
  WARDEN_REQUIRE(model, "TRITONBACKEND_ModelSetState");
  model->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelReportMemoryUsage(TRITONBACKEND_Model* model,
                                                         TRITONSERVER_BufferAttributes** usage, uint32_t usage_size) {
  WARDEN_REQUIRE(model && (usage || usage_size == 0), "TRITONBACKEND_ModelReportMemoryUsage");
  return nullptr;  // accepted; Warden does not report per-model memory usage yet
}

// ---------------------------------------------------------------- the server handle

TRITONSERVER_Error* TRITONSERVER_ServerIsLive(TRITONSERVER_Server* server, bool* live) {
  WARDEN_REQUIRE(server && live, "TRITONSERVER_ServerIsLive");
  *live = true;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_ServerIsReady(TRITONSERVER_Server* server, bool* ready) {
  WARDEN_REQUIRE(server && ready, "TRITONSERVER_ServerIsReady");
  *ready = true;
  return nullptr;
}

}  // extern "C"
