// Backend libraries: loading (spec §6.1, §6.2, §6.9), TRITONBACKEND_Backend* accessors,
// backend attributes, and the memory manager (spec §6.3).
#include <dlfcn.h>

#include <cstdlib>
#include <sstream>

#include "objects.h"

namespace {

// Backends resolve TRITONSERVER_*/TRITONBACKEND_* from their DT_NEEDED libtritonserver.so (matched
// by SONAME against this already-loaded library). A backend linked without that dependency relies
// on the symbols being global, as they are in Triton's own executable: promote this library to
// RTLD_GLOBAL once (Node's process.dlopen loaded it as a dependency of the addon, RTLD_LOCAL).
void PromoteSelfToGlobal() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&TRITONSERVER_ApiVersion), &info) != 0 && info.dli_fname != nullptr) {
      // The handle is intentionally kept: the library stays global for the process lifetime.
      void* self = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
      if (self == nullptr) {
        WARDEN_LOG(TRITONSERVER_LOG_WARN,
                   std::string("could not make libtritonserver.so symbols global: ") + dlerror());
      }
    }
  });
}

template <typename Fn>
Fn Sym(void* dl, const char* name) {
  dlerror();
  return reinterpret_cast<Fn>(dlsym(dl, name));
}

const char* KindName(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_CPU:
      return "KIND_CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU:
      return "KIND_GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL:
      return "KIND_MODEL";
    default:
      return "KIND_AUTO";
  }
}

std::string GroupsJson(const std::vector<TRITONBACKEND_BackendAttribute::Group>& groups) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    if (i > 0) os << ',';
    os << "{\"kind\":\"" << KindName(g.kind) << "\",\"count\":" << g.count << ",\"gpus\":[";
    for (size_t j = 0; j < g.device_ids.size(); ++j) os << (j ? "," : "") << g.device_ids[j];
    os << "]}";
  }
  os << ']';
  return os.str();
}

TRITONSERVER_Error* CallEntry(TRITONBACKEND_Backend::BackendFn fn, TRITONBACKEND_Backend* be, const char* what) {
  try {
    return fn(be);
  } catch (...) {
    return warden::EscapedException(be->name, what);
  }
}

}  // namespace

extern "C" {

TRITONSERVER_Error* WARDEN_BackendLoad(const char* name, const char* library_path, const char* artifacts_dir,
                                       const char* config_json, TRITONBACKEND_Backend** backend) {
  if (name == nullptr || library_path == nullptr || backend == nullptr) {
    return warden::InvalidArg("WARDEN_BackendLoad: null argument");
  }
  PromoteSelfToGlobal();
  warden::InstallStdioForChildren();  // before the backend can start a process
  // RTLD_NOW: every undefined symbol must resolve now, so a backend referencing a function this
  // host lacks fails here with the symbol's name instead of crashing later (spec §6.1).
  void* dl = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* why = dlerror();
    return warden::Err(TRITONSERVER_ERROR_INVALID_ARG, std::string("unable to load backend library '") + library_path +
                                                           "': " + (why == nullptr ? "unknown dlopen error" : why));
  }
  auto be = std::make_unique<TRITONBACKEND_Backend>();
  be->name = name;
  be->library_path = library_path;
  be->artifacts_dir = artifacts_dir == nullptr ? "" : artifacts_dir;
  be->config.json = config_json == nullptr ? "{\"cmdline\":{}}" : config_json;
  be->dl = dl;
  be->memory_manager.backend = be.get();
  be->initialize = Sym<TRITONBACKEND_Backend::BackendFn>(dl, "TRITONBACKEND_Initialize");
  be->finalize = Sym<TRITONBACKEND_Backend::BackendFn>(dl, "TRITONBACKEND_Finalize");
  be->get_attribute = Sym<TRITONBACKEND_Backend::AttributeFn>(dl, "TRITONBACKEND_GetBackendAttribute");
  be->model_initialize = Sym<TRITONBACKEND_Backend::ModelFn>(dl, "TRITONBACKEND_ModelInitialize");
  be->model_finalize = Sym<TRITONBACKEND_Backend::ModelFn>(dl, "TRITONBACKEND_ModelFinalize");
  be->instance_initialize = Sym<TRITONBACKEND_Backend::InstanceFn>(dl, "TRITONBACKEND_ModelInstanceInitialize");
  be->instance_finalize = Sym<TRITONBACKEND_Backend::InstanceFn>(dl, "TRITONBACKEND_ModelInstanceFinalize");
  be->instance_ready = Sym<TRITONBACKEND_Backend::InstanceFn>(dl, "TRITONBACKEND_ModelInstanceReady");
  be->instance_execute = Sym<TRITONBACKEND_Backend::ExecuteFn>(dl, "TRITONBACKEND_ModelInstanceExecute");
  if (be->instance_execute == nullptr) {
    dlclose(dl);
    return warden::InvalidArg(std::string("unable to find required entrypoint 'TRITONBACKEND_ModelInstanceExecute' in "
                                          "backend library '") +
                              library_path + "'");
  }
  if (Sym<void*>(dl, "TRITONBACKEND_ModelBatcherInitialize") != nullptr) {
    WARDEN_LOG(TRITONSERVER_LOG_WARN, "backend '" + be->name +
                                          "' exports custom batching hooks (TRITONBACKEND_ModelBatcher*); Warden's "
                                          "dynamic batcher does not call them");
  }
  if (be->initialize != nullptr) {
    TRITONSERVER_Error* err = CallEntry(be->initialize, be.get(), "TRITONBACKEND_Initialize");
    if (err != nullptr) {
      dlclose(dl);
      return err;
    }
  }
  if (be->get_attribute != nullptr) {
    TRITONSERVER_Error* err = nullptr;
    try {
      err = be->get_attribute(be.get(), &be->attributes);
    } catch (...) {
      err = warden::EscapedException(be->name, "TRITONBACKEND_GetBackendAttribute");
    }
    if (err != nullptr) {
      if (be->finalize != nullptr)
        TRITONSERVER_ErrorDelete(CallEntry(be->finalize, be.get(), "TRITONBACKEND_Finalize"));
      dlclose(dl);
      return err;
    }
    be->preferred_groups_json = GroupsJson(be->attributes.preferred_groups);
  }
  *backend = be.release();
  return nullptr;
}

TRITONSERVER_Error* WARDEN_BackendAttributes(TRITONBACKEND_Backend* backend, bool* parallel_instance_loading,
                                             TRITONBACKEND_ExecutionPolicy* policy,
                                             const char** preferred_groups_json) {
  if (backend == nullptr) return warden::InvalidArg("WARDEN_BackendAttributes: null backend");
  if (parallel_instance_loading != nullptr) {
    *parallel_instance_loading = backend->attributes.parallel_instance_loading;
  }
  if (policy != nullptr) *policy = TRITONBACKEND_ExecutionPolicy(backend->execution_policy.load());
  if (preferred_groups_json != nullptr) *preferred_groups_json = backend->preferred_groups_json.c_str();
  return nullptr;
}

TRITONSERVER_Error* WARDEN_BackendUnload(TRITONBACKEND_Backend* backend) {
  if (backend == nullptr) return warden::InvalidArg("WARDEN_BackendUnload: null backend");
  if (backend->live_models.load() != 0) {
    return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE, "backend '" + backend->name + "' still has loaded models");
  }
  TRITONSERVER_Error* err = nullptr;
  if (backend->finalize != nullptr) err = CallEntry(backend->finalize, backend, "TRITONBACKEND_Finalize");
  dlclose(backend->dl);
  delete backend;
  return err;
}

// ---------------------------------------------------------------- TRITONBACKEND_Backend*

TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name) {
  WARDEN_REQUIRE(backend && name, "TRITONBACKEND_BackendName");
  *name = backend->name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendConfig(TRITONBACKEND_Backend* backend, TRITONSERVER_Message** backend_config) {
  WARDEN_REQUIRE(backend && backend_config, "TRITONBACKEND_BackendConfig");
  *backend_config = &backend->config;  // host-owned
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendExecutionPolicy(TRITONBACKEND_Backend* backend,
                                                         TRITONBACKEND_ExecutionPolicy* policy) {
  WARDEN_REQUIRE(backend && policy, "TRITONBACKEND_BackendExecutionPolicy");
  *policy = TRITONBACKEND_ExecutionPolicy(backend->execution_policy.load());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendSetExecutionPolicy(TRITONBACKEND_Backend* backend,
                                                            TRITONBACKEND_ExecutionPolicy policy) {
  WARDEN_REQUIRE(backend, "TRITONBACKEND_BackendSetExecutionPolicy");
  if (policy != TRITONBACKEND_EXECUTION_BLOCKING && policy != TRITONBACKEND_EXECUTION_DEVICE_BLOCKING) {
    return warden::InvalidArg("unknown execution policy " + std::to_string(int(policy)));
  }
  backend->execution_policy = policy;  // applies to instances created afterwards
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendArtifacts(TRITONBACKEND_Backend* backend,
                                                   TRITONBACKEND_ArtifactType* artifact_type, const char** location) {
  WARDEN_REQUIRE(backend && artifact_type && location, "TRITONBACKEND_BackendArtifacts");
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = backend->artifacts_dir.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendMemoryManager(TRITONBACKEND_Backend* backend,
                                                       TRITONBACKEND_MemoryManager** manager) {
  WARDEN_REQUIRE(backend && manager, "TRITONBACKEND_BackendMemoryManager");
  *manager = &backend->memory_manager;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state) {
  WARDEN_REQUIRE(backend && state, "TRITONBACKEND_BackendState");
  *state = backend->state.load();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state) {
  WARDEN_REQUIRE(backend, "TRITONBACKEND_BackendSetState");
  backend->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(TRITONBACKEND_BackendAttribute* attributes,
                                                                            const TRITONSERVER_InstanceGroupKind kind,
                                                                            const uint64_t count,
                                                                            const uint64_t* device_ids,
                                                                            const uint64_t id_count) {
  WARDEN_REQUIRE(attributes && (device_ids || id_count == 0),
                 "TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup");
  TRITONBACKEND_BackendAttribute::Group g{kind, count, {}};
  for (uint64_t i = 0; i < id_count; ++i) g.device_ids.push_back(device_ids[i]);
  attributes->preferred_groups.push_back(std::move(g));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute* attributes, bool enabled) {
  WARDEN_REQUIRE(attributes, "TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading");
  attributes->parallel_instance_loading = enabled;
  return nullptr;
}

// ---------------------------------------------------------------- memory manager

TRITONSERVER_Error* TRITONBACKEND_MemoryManagerAllocate(TRITONBACKEND_MemoryManager* manager, void** buffer,
                                                        const TRITONSERVER_MemoryType memory_type,
                                                        const int64_t memory_type_id, const uint64_t byte_size) {
  WARDEN_REQUIRE(manager && buffer, "TRITONBACKEND_MemoryManagerAllocate");
  if (memory_type != TRITONSERVER_MEMORY_CPU) {
    // No CUDA in this host: pinned and GPU memory can never be allocated (backend utils fall back
    // to CPU on UNSUPPORTED).
    return warden::Unsupported(std::string(TRITONSERVER_MemoryTypeString(memory_type)) + " memory (id " +
                               std::to_string(memory_type_id) +
                               ") is not supported: Warden's native backend host has no CUDA");
  }
  void* p = warden::AllocCpu(byte_size);
  if (p == nullptr) {
    return warden::Err(TRITONSERVER_ERROR_UNAVAILABLE,
                       "unable to allocate " + std::to_string(byte_size) + " bytes of CPU memory");
  }
  *buffer = p;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_MemoryManagerFree(TRITONBACKEND_MemoryManager* manager, void* buffer,
                                                    const TRITONSERVER_MemoryType memory_type,
                                                    const int64_t memory_type_id) {
  WARDEN_REQUIRE(manager, "TRITONBACKEND_MemoryManagerFree");
  if (memory_type != TRITONSERVER_MEMORY_CPU) {
    return warden::Unsupported(std::string(TRITONSERVER_MemoryTypeString(memory_type)) +
                               " memory was never allocated by this host");
  }
  (void)memory_type_id;
  std::free(buffer);
  return nullptr;
}

}  // extern "C"
