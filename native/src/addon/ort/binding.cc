// The addon's binding of Warden's in-process ONNX Runtime engine (native/rust/ort-engine, C ABI in
// warden/ort_engine.h): `ort.*` functions over an opaque session external. A run is synchronous on the
// calling (JS) thread and is shaped to cost few Node-API calls: the inputs' descriptions travel in
// one Float64Array, their bytes as an array of Uint8Arrays (borrowed for the call), the outputs'
// shapes come back in a Float64Array the caller owns, and their bytes as new Uint8Arrays: copied
// when small, else external ArrayBuffers over ONNX Runtime's own output memory (no copy), released
// when collected. The engine's errors (WardenError) become the addon's TritonError.
#include <napi.h>

#include <cstring>
#include <string>
#include <vector>

#include "../addon.h"
#include "warden/ort_engine.h"

namespace warden_ort {
namespace {

using warden_addon::TritonError;

// Outputs at most this large are copied into a JS ArrayBuffer and released at once; larger ones
// are handed over without a copy (a finalizer per buffer costs more than copying a few KiB).
constexpr size_t kCopyMaxBytes = 64 * 1024;
// Bounds on what one call may describe (checked before anything is allocated).
constexpr size_t kMaxTensors = 4096;

struct SessionRef {
  WoSession* session = nullptr;
};

SessionRef* RefOf(const Napi::Value& v) {
  if (!v.IsExternal()) throw Napi::TypeError::New(v.Env(), "expected an ONNX Runtime session");
  SessionRef* ref = v.As<Napi::External<SessionRef>>().Data();
  if (ref->session == nullptr) throw Napi::Error::New(v.Env(), "the ONNX Runtime session is closed");
  return ref;
}

// init(libPath): loads ONNX Runtime (once per process). Throws on failure.
Napi::Value Init(const Napi::CallbackInfo& info) {
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (WardenError* err = wo_init(path.c_str())) throw TritonError(info.Env(), err);
  return info.Env().Undefined();
}

Napi::Array Describe(Napi::Env env, WoSession* s, bool output) {
  size_t n = wo_session_count(s, output);
  Napi::Array list = Napi::Array::New(env, n);
  for (size_t i = 0; i < n; i++) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("name", Napi::String::New(env, wo_session_name(s, output, i)));
    o.Set("type", Napi::Number::New(env, wo_session_type(s, output, i)));
    list.Set(i, o);
  }
  return list;
}

// Opens a model file on a libuv thread (loading and optimizing a graph can take long).
class OpenWorker : public Napi::AsyncWorker {
 public:
  OpenWorker(Napi::Env env, std::string path, uint32_t intra, uint32_t inter)
      : Napi::AsyncWorker(env, "warden:ort-open"),
        deferred_(Napi::Promise::Deferred::New(env)),
        path_(std::move(path)),
        intra_(intra),
        inter_(inter) {}
  ~OpenWorker() override {
    wo_session_close(session_);  // still set only if OnOK never took it
    warden_error_delete(error_);
  }
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { error_ = wo_session_open(path_.c_str(), intra_, inter_, &session_); }
  void OnOK() override {
    Napi::Env env = Env();
    if (error_ != nullptr) {
      WardenError* e = error_;
      error_ = nullptr;
      deferred_.Reject(TritonError(env, e).Value());
      return;
    }
    WoSession* s = session_;
    session_ = nullptr;
    auto* ref = new SessionRef{s};
    Napi::Object result = Napi::Object::New(env);
    result.Set("session", Napi::External<SessionRef>::New(env, ref, [](Napi::Env, SessionRef* r) {
                 wo_session_close(r->session);  // null (a no-op) once close() ran
                 delete r;
               }));
    result.Set("inputs", Describe(env, s, false));
    result.Set("outputs", Describe(env, s, true));
    deferred_.Resolve(result);
  }

 private:
  Napi::Promise::Deferred deferred_;
  std::string path_;
  uint32_t intra_, inter_;
  WoSession* session_ = nullptr;
  WardenError* error_ = nullptr;
};

// Releases a session on a libuv thread (a large graph's memory takes a while to give back).
class CloseWorker : public Napi::AsyncWorker {
 public:
  CloseWorker(Napi::Env env, WoSession* s)
      : Napi::AsyncWorker(env, "warden:ort-close"), deferred_(Napi::Promise::Deferred::New(env)), session_(s) {}
  Napi::Promise Promise() { return deferred_.Promise(); }
  void Execute() override { wo_session_close(session_); }
  void OnOK() override { deferred_.Resolve(Env().Undefined()); }

 private:
  Napi::Promise::Deferred deferred_;
  WoSession* session_;
};

// open(path, intraOpThreads, interOpThreads) -> Promise<{ session, inputs: [{name, type}], outputs }>.
Napi::Value Open(const Napi::CallbackInfo& info) {
  std::string path = info[0].As<Napi::String>().Utf8Value();
  auto* w = new OpenWorker(info.Env(), std::move(path), info[1].As<Napi::Number>().Uint32Value(),
                           info[2].As<Napi::Number>().Uint32Value());
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

// close(session) -> Promise<void>: later runs throw at once; the release happens off the JS thread.
Napi::Value Close(const Napi::CallbackInfo& info) {
  WoSession* s = nullptr;
  if (info[0].IsExternal()) {
    SessionRef* ref = info[0].As<Napi::External<SessionRef>>().Data();
    s = ref->session;
    ref->session = nullptr;
  }
  auto* w = new CloseWorker(info.Env(), s);
  Napi::Promise p = w->Promise();
  w->Queue();
  return p;
}

// run(session, spec: Float64Array, data: Uint8Array[], shapes: Float64Array) -> Uint8Array[]
//   spec:   [nIn, nOut, per input (index, elemType, rank, dims...), per output (index)]
//   shapes: filled with, per output, (elemType, rank, dims...); at least nOut * (2 + 32) long
Napi::Value Run(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SessionRef* ref = RefOf(info[0]);
  Napi::Float64Array spec = info[1].As<Napi::Float64Array>();
  Napi::Array datas = info[2].As<Napi::Array>();
  Napi::Float64Array shapes = info[3].As<Napi::Float64Array>();
  const double* sp = spec.Data();
  size_t len = spec.ElementLength();
  size_t at = 0;
  auto next = [&]() -> double {
    if (at >= len) throw Napi::RangeError::New(env, "run spec is truncated");
    return sp[at++];
  };
  auto count = [&](double v, size_t max, const char* what) -> size_t {
    if (!(v >= 0 && v <= double(max)) || v != double(size_t(v)))
      throw Napi::RangeError::New(env, std::string("run spec: bad ") + what);
    return size_t(v);
  };
  size_t n_in = count(next(), kMaxTensors, "input count");
  size_t n_out = count(next(), kMaxTensors, "output count");
  if (datas.Length() != n_in) throw Napi::RangeError::New(env, "run: one data buffer per input");
  if (shapes.ElementLength() < n_out * (2 + WO_MAX_RANK))
    throw Napi::RangeError::New(env, "run: shapes buffer too small");
  std::vector<WoInput> inputs(n_in);
  std::vector<int64_t> dims;
  dims.reserve(n_in * 4);
  std::vector<size_t> dim_at(n_in);
  for (size_t i = 0; i < n_in; i++) {
    WoInput& in = inputs[i];
    in.index = uint32_t(count(next(), UINT32_MAX, "input index"));
    in.elem_type = int32_t(count(next(), 64, "element type"));
    in.rank = uint32_t(count(next(), WO_MAX_RANK, "rank"));
    dim_at[i] = dims.size();
    for (uint32_t d = 0; d < in.rank; d++) dims.push_back(int64_t(count(next(), double(1ull << 53), "dimension")));
    Napi::Value v = datas[i];
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw Napi::TypeError::New(env, "run: input data must be a Uint8Array");
    Napi::Uint8Array bytes = v.As<Napi::Uint8Array>();
    in.data = bytes.Data();
    in.bytes = bytes.ByteLength();
  }
  for (size_t i = 0; i < n_in; i++) inputs[i].shape = dims.data() + dim_at[i];
  std::vector<uint32_t> out_index(n_out);
  for (size_t k = 0; k < n_out; k++) out_index[k] = uint32_t(count(next(), UINT32_MAX, "output index"));
  std::vector<WoOutput> outputs(n_out);
  if (WardenError* err = wo_session_run(ref->session, inputs.data(), n_in, out_index.data(), n_out, outputs.data())) {
    throw TritonError(env, err);
  }
  // from here every output value is ours to release: hand each to JS (or release it) in one pass
  double* sh = shapes.Data();
  Napi::Array result = Napi::Array::New(env, n_out);
  size_t handed = 0;
  try {
    for (; handed < n_out; handed++) {
      WoOutput& o = outputs[handed];
      double* row = sh + handed * (2 + WO_MAX_RANK);
      row[0] = o.elem_type;
      row[1] = o.rank;
      for (uint32_t d = 0; d < o.rank; d++) row[2 + d] = double(o.shape[d]);
      if (o.bytes <= kCopyMaxBytes) {
        Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(env, o.bytes);
        if (o.bytes > 0) memcpy(ab.Data(), o.data, o.bytes);
        wo_value_release(o.value);
        o.value = nullptr;
        result.Set(handed, Napi::Uint8Array::New(env, o.bytes, ab, 0));
      } else {
        void* value = o.value;
        o.value = nullptr;
        Napi::ArrayBuffer ab = Napi::ArrayBuffer::New(
            env, const_cast<uint8_t*>(o.data), o.bytes, [](Napi::Env, void*, void* hint) { wo_value_release(hint); },
            value);
        result.Set(handed, Napi::Uint8Array::New(env, o.bytes, ab, 0));
      }
    }
  } catch (...) {
    for (size_t k = handed; k < n_out; k++) wo_value_release(outputs[k].value);
    throw;
  }
  return result;
}

}  // namespace

WoSession* SessionOf(const Napi::Value& v) { return RefOf(v)->session; }

Napi::Object InitBinding(Napi::Env env) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("init", Napi::Function::New(env, Init, "init"));
  o.Set("open", Napi::Function::New(env, Open, "open"));
  o.Set("close", Napi::Function::New(env, Close, "close"));
  o.Set("run", Napi::Function::New(env, Run, "run"));
  o.Set("maxRank", Napi::Number::New(env, WO_MAX_RANK));
  return o;
}

}  // namespace warden_ort
