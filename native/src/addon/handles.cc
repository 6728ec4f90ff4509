// BackendHandle and ModelHandle: loading, attributes, auto-complete config, unloading.
#include "addon.h"

namespace warden_addon {

Napi::FunctionReference BackendHandle::constructor;
Napi::FunctionReference ModelHandle::constructor;

std::vector<std::string> StringArray(Napi::Env env, Napi::Value v, const char* what) {
  std::vector<std::string> out;
  if (v.IsUndefined() || v.IsNull()) return out;
  if (!v.IsArray()) throw Napi::TypeError::New(env, std::string(what) + " must be an array of strings");
  Napi::Array a = v.As<Napi::Array>();
  out.reserve(a.Length());
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value s = a.Get(i);
    if (!s.IsString()) throw Napi::TypeError::New(env, std::string(what) + " must be an array of strings");
    out.push_back(s.As<Napi::String>().Utf8Value());
  }
  return out;
}

namespace {

std::vector<const char*> Pointers(const std::vector<std::string>& v) {
  std::vector<const char*> p;
  p.reserve(v.size());
  for (const auto& s : v) p.push_back(s.c_str());
  return p;
}

void RequireOpen(Napi::Env env, const void* p, const char* what) {
  if (p == nullptr) throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, std::string(what) + " was already unloaded");
}

}  // namespace

// ---------------------------------------------------------------- BackendHandle

Napi::Function BackendHandle::Init(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "BackendHandle",
      {InstanceMethod("attributes", &BackendHandle::Attributes), InstanceMethod("loadModel", &BackendHandle::LoadModel),
       InstanceMethod("unload", &BackendHandle::Unload)});
  constructor = Napi::Persistent(f);
  constructor.SuppressDestruct();
  return f;
}

BackendHandle::BackendHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<BackendHandle>(info) {}

Napi::Value BackendHandle::Attributes(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, backend, "backend");
  bool parallel = false;
  TRITONBACKEND_ExecutionPolicy policy = TRITONBACKEND_EXECUTION_BLOCKING;
  const char* groups = "[]";
  if (TRITONSERVER_Error* e = WARDEN_BackendAttributes(backend, &parallel, &policy, &groups)) {
    throw TritonError(env, e);
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("parallelInstanceLoading", parallel);
  o.Set("executionPolicy", policy == TRITONBACKEND_EXECUTION_DEVICE_BLOCKING ? "DEVICE_BLOCKING" : "BLOCKING");
  o.Set("preferredInstanceGroupsJson", groups);
  return o;
}

/** loadModel({name, version, repositoryPath, configJson, autoCompleteConfig, outputs, decoupled, serverOwner}) */
Napi::Value BackendHandle::LoadModel(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, backend, "backend");
  if (!info[0].IsObject()) throw Napi::TypeError::New(env, "loadModel(options)");
  Napi::Object o = info[0].As<Napi::Object>();
  struct Args {
    std::string name, repo, config;
    uint64_t version;
    uint64_t server_owner;
    bool auto_complete, decoupled;
    std::vector<std::string> outputs;
  };
  auto a = std::make_shared<Args>();
  a->name = o.Get("name").ToString();
  a->version = uint64_t(o.Get("version").ToNumber().Int64Value());
  a->repo = o.Get("repositoryPath").ToString();
  a->config = o.Get("configJson").ToString();
  a->auto_complete = o.Get("autoCompleteConfig").ToBoolean();
  a->decoupled = o.Get("decoupled").ToBoolean();
  a->server_owner = o.Get("serverOwner").IsNumber() ? uint64_t(o.Get("serverOwner").ToNumber().Int64Value()) : 0;
  a->outputs = StringArray(env, o.Get("outputs"), "outputs");
  auto out = std::make_shared<TRITONBACKEND_Model*>(nullptr);
  TRITONBACKEND_Backend* be = backend;
  return RunAsync(
      env, "warden-load-model",
      [a, out, be] {
        std::vector<const char*> outputs = Pointers(a->outputs);
        WARDEN_ModelDesc d{};
        d.name = a->name.c_str();
        d.version = a->version;
        d.repository_path = a->repo.c_str();
        d.config_json = a->config.c_str();
        d.auto_complete_config = a->auto_complete;
        d.output_names = outputs.data();
        d.output_count = uint32_t(outputs.size());
        d.decoupled = a->decoupled;
        d.server_owner = a->server_owner;
        return WARDEN_ModelLoad(be, &d, out.get());
      },
      [out](Napi::Env env) {
        Napi::Object h = ModelHandle::constructor.New({});
        ModelHandle::Unwrap(h)->model = *out;
        return h;
      });
}

Napi::Value BackendHandle::Unload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, backend, "backend");
  TRITONBACKEND_Backend* be = backend;
  backend = nullptr;  // TRITONBACKEND_Finalize + dlclose happen whether or not Finalize errs
  return RunAsync(
      env, "warden-unload-backend", [be] { return WARDEN_BackendUnload(be); },
      [](Napi::Env env) { return env.Undefined(); });
}

// ---------------------------------------------------------------- ModelHandle

Napi::Function ModelHandle::Init(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "ModelHandle",
      {InstanceMethod("setConfigJson", &ModelHandle::SetConfigJson),
       InstanceMethod("updateConfig", &ModelHandle::UpdateConfig),
       InstanceMethod("createInstance", &ModelHandle::CreateInstance),
       InstanceMethod("liveObjects", &ModelHandle::LiveObjects), InstanceMethod("unload", &ModelHandle::Unload)});
  constructor = Napi::Persistent(f);
  constructor.SuppressDestruct();
  return f;
}

ModelHandle::ModelHandle(const Napi::CallbackInfo& info) : Napi::ObjectWrap<ModelHandle>(info) {}

/** liveObjects() -> {responses, factories}: backend objects of this model not given back yet. */
Napi::Value ModelHandle::LiveObjects(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int64_t responses = 0, factories = 0;
  if (model != nullptr) WARDEN_ModelLiveObjects(model, &responses, &factories);
  Napi::Object o = Napi::Object::New(env);
  o.Set("responses", Napi::Number::New(env, double(responses)));
  o.Set("factories", Napi::Number::New(env, double(factories)));
  return o;
}

Napi::Value ModelHandle::SetConfigJson(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, model, "model");
  const char* json = WARDEN_ModelSetConfigJson(model);
  return json == nullptr ? env.Null() : Napi::String::New(env, json);
}

/** updateConfig(configJson, outputs, decoupled) */
Napi::Value ModelHandle::UpdateConfig(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, model, "model");
  std::string json = info[0].ToString();
  std::vector<std::string> outputs = StringArray(env, info[1], "outputs");
  std::vector<const char*> p = Pointers(outputs);
  if (TRITONSERVER_Error* e =
          WARDEN_ModelUpdateConfig(model, json.c_str(), p.data(), uint32_t(p.size()), info[2].ToBoolean())) {
    throw TritonError(env, e);
  }
  return env.Undefined();
}

/** createInstance({name, kind, deviceId, hostPolicy, passive, profiles, secondaryDevices}, onEvents) */
Napi::Value ModelHandle::CreateInstance(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, model, "model");
  if (!info[0].IsObject() || !info[1].IsFunction()) {
    throw Napi::TypeError::New(env, "createInstance(spec, onEvents)");
  }
  Napi::Object o = info[0].As<Napi::Object>();
  std::string name = o.Get("name").ToString();
  std::string policy = o.Get("hostPolicy").ToString();
  std::vector<std::string> profiles = StringArray(env, o.Get("profiles"), "profiles");
  std::vector<const char*> profile_ptrs = Pointers(profiles);
  std::vector<std::string> sec_kinds;
  std::vector<int64_t> sec_ids;
  Napi::Value sec = o.Get("secondaryDevices");
  if (sec.IsArray()) {
    Napi::Array a = sec.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) {
      Napi::Object d = a.Get(i).As<Napi::Object>();
      sec_kinds.push_back(d.Get("kind").ToString());
      sec_ids.push_back(d.Get("deviceId").ToNumber().Int64Value());
    }
  }
  std::vector<const char*> sec_kind_ptrs = Pointers(sec_kinds);
  WARDEN_InstanceDesc d{};
  d.name = name.c_str();
  d.kind = TRITONSERVER_InstanceGroupKind(o.Get("kind").ToNumber().Int32Value());
  d.device_id = o.Get("deviceId").ToNumber().Int32Value();
  d.host_policy_name = policy.c_str();
  d.passive = o.Get("passive").ToBoolean();
  d.profiles = profile_ptrs.data();
  d.profile_count = uint32_t(profile_ptrs.size());
  d.secondary_device_kinds = sec_kind_ptrs.data();
  d.secondary_device_ids = sec_ids.data();
  d.secondary_device_count = uint32_t(sec_ids.size());
  TRITONBACKEND_ModelInstance* inst = nullptr;
  if (TRITONSERVER_Error* e = WARDEN_InstanceNew(model, &d, &inst)) throw TritonError(env, e);
  Napi::Object h = InstanceHandle::constructor.New({info[1]});
  InstanceHandle::Unwrap(h)->instance = inst;
  return h;
}

Napi::Value ModelHandle::Unload(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  RequireOpen(env, model, "model");
  TRITONBACKEND_Model* m = model;
  model = nullptr;
  return RunAsync(
      env, "warden-unload-model", [m] { return WARDEN_ModelUnload(m); }, [](Napi::Env env) { return env.Undefined(); });
}

}  // namespace warden_addon
