// Standalone driver for Warden's libtritonserver.so: loads the sample and failure-test backends
// through the embedding API (warden/host.h), runs thousands of requests and checks every Triton
// ownership rule the host promises (spec §6.6–§6.8): exactly one FINAL response and exactly one
// release per request, outputs equal to what the backend computed, clean errors for broken
// backends. Built with -DWARDEN_ASAN=ON it is the AddressSanitizer/LeakSanitizer run CI does on
// every test run (test/backends/native/asan.test.ts).
//
// usage: warden_native_driver <backend_dir> <test_backend_dir> [identity_requests=10000]
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "warden/host.h"

namespace {

int failures = 0;
#define CHECK(cond, ...)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      ++failures;                                                       \
      std::fprintf(stderr, "CHECK FAILED %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                \
      std::fprintf(stderr, "\n");                                       \
    }                                                                   \
  } while (0)

std::string TakeMessage(TRITONSERVER_Error* e) {
  if (e == nullptr) return "";
  std::string m = TRITONSERVER_ErrorMessage(e);
  TRITONSERVER_ErrorDelete(e);
  return m;
}

struct Tensor {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

struct Response {
  bool has_error = false;
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_UNKNOWN;
  std::string message;
  std::vector<Tensor> outputs;
};

/** One request's inputs (owned here: the host borrows them until release) and what came back. */
struct Call {
  std::vector<Tensor> inputs;
  std::vector<std::string> outputs;
  std::vector<WARDEN_InputDesc> input_descs;
  std::vector<const char*> output_ptrs;
  std::string id;

  std::mutex mu;
  std::condition_variable cv;
  std::vector<Response> responses;
  int finals = 0;
  int releases = 0;
  bool null_final = false;
  bool stats_reported = false;

  WARDEN_RequestDesc Desc() {
    input_descs.clear();
    for (auto& t : inputs) {
      input_descs.push_back(WARDEN_InputDesc{t.name.c_str(), t.datatype, t.shape.data(), uint32_t(t.shape.size()),
                                             t.data.data(), uint64_t(t.data.size())});
    }
    output_ptrs.clear();
    for (auto& o : outputs) output_ptrs.push_back(o.c_str());
    WARDEN_RequestDesc d{};
    d.id = id.c_str();
    d.inputs = input_descs.data();
    d.input_count = uint32_t(input_descs.size());
    d.requested_outputs = output_ptrs.data();
    d.requested_output_count = uint32_t(output_ptrs.size());
    d.response_fn = &Call::OnResponse;
    d.release_fn = &Call::OnRelease;
    d.userp = this;
    return d;
  }

  static void OnResponse(void* userp, TRITONSERVER_InferenceResponse* r, uint32_t flags) {
    auto* c = static_cast<Call*>(userp);
    Response resp;
    if (r != nullptr) {
      if (TRITONSERVER_Error* e = TRITONSERVER_InferenceResponseError(r)) {
        resp.has_error = true;
        resp.code = TRITONSERVER_ErrorCode(e);
        resp.message = TRITONSERVER_ErrorMessage(e);
        TRITONSERVER_ErrorDelete(e);  // the caller owns it, as in Triton
      }
      uint32_t n = 0;
      TakeMessage(TRITONSERVER_InferenceResponseOutputCount(r, &n));
      for (uint32_t i = 0; i < n; ++i) {
        const char* name;
        TRITONSERVER_DataType dt;
        const int64_t* shape;
        uint64_t dims;
        const void* base;
        size_t size;
        TRITONSERVER_MemoryType mt;
        int64_t mt_id;
        void* userp_out;
        TakeMessage(TRITONSERVER_InferenceResponseOutput(r, i, &name, &dt, &shape, &dims, &base, &size, &mt, &mt_id,
                                                         &userp_out));
        Tensor t{name, dt, std::vector<int64_t>(shape, shape + dims), {}};
        // Alternate between copying and taking ownership of the buffer, as the addon does.
        if (i % 2 == 1) {
          void* owned = WARDEN_InferenceResponseOutputTakeBuffer(r, i);
          t.data.assign(static_cast<uint8_t*>(owned), static_cast<uint8_t*>(owned) + size);
          std::free(owned);
        } else {
          t.data.assign(static_cast<const uint8_t*>(base), static_cast<const uint8_t*>(base) + size);
        }
        resp.outputs.push_back(std::move(t));
      }
      TRITONSERVER_InferenceResponseDelete(r);
    }
    std::lock_guard<std::mutex> lk(c->mu);
    if (r != nullptr) c->responses.push_back(std::move(resp));
    if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) {
      c->finals++;
      if (r == nullptr) c->null_final = true;
    }
    c->cv.notify_all();
  }

  static void OnRelease(void* userp, const WARDEN_RequestStats* stats) {
    auto* c = static_cast<Call*>(userp);
    std::lock_guard<std::mutex> lk(c->mu);
    c->releases++;
    c->stats_reported = stats != nullptr && stats->reported;
    c->cv.notify_all();
  }

  /** Wait for the final response and the release; false on timeout. */
  bool Wait(int seconds = 30) {
    std::unique_lock<std::mutex> lk(mu);
    return cv.wait_for(lk, std::chrono::seconds(seconds), [this] { return finals >= 1 && releases >= 1; });
  }
};

struct Done {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::string error;
  WARDEN_ExecStats stats{};
  static void OnDone(void* userp, TRITONSERVER_Error* err) {
    auto* d = static_cast<Done*>(userp);
    std::lock_guard<std::mutex> lk(d->mu);
    d->error = TakeMessage(err);
    d->done = true;
    d->cv.notify_all();
  }
  static void OnExec(void* userp, TRITONSERVER_Error* err, const WARDEN_ExecStats* stats) {
    auto* d = static_cast<Done*>(userp);
    std::lock_guard<std::mutex> lk(d->mu);
    d->error = TakeMessage(err);
    d->stats = *stats;
    d->done = true;
    d->cv.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [this] { return done; });
  }
};

std::string BackendConfig(const std::string& dir) {
  return "{\"cmdline\":{\"auto-complete-config\":\"true\",\"backend-directory\":\"" + dir +
         "\",\"min-compute-capability\":\"6.000000\",\"default-max-batch-size\":\"4\"}}";
}

TRITONBACKEND_Backend* LoadBackend(const std::string& dir, const std::string& name, std::string* error = nullptr) {
  std::string lib = dir + "/" + name + "/libtriton_" + name + ".so";
  TRITONBACKEND_Backend* be = nullptr;
  std::string msg = TakeMessage(
      WARDEN_BackendLoad(name.c_str(), lib.c_str(), (dir + "/" + name).c_str(), BackendConfig(dir).c_str(), &be));
  if (error != nullptr) *error = msg;
  return msg.empty() ? be : nullptr;
}

TRITONBACKEND_Model* LoadModel(TRITONBACKEND_Backend* be, const std::string& name, const std::string& config,
                               std::vector<const char*> outputs, bool decoupled, std::string* error = nullptr) {
  WARDEN_ModelDesc d{};
  d.name = name.c_str();
  d.version = 1;
  d.repository_path = "/nonexistent/repository";
  d.config_json = config.c_str();
  d.auto_complete_config = true;
  d.output_names = outputs.data();
  d.output_count = uint32_t(outputs.size());
  d.decoupled = decoupled;
  TRITONBACKEND_Model* m = nullptr;
  std::string msg = TakeMessage(WARDEN_ModelLoad(be, &d, &m));
  if (error != nullptr) *error = msg;
  return msg.empty() ? m : nullptr;
}

TRITONBACKEND_ModelInstance* NewInstance(TRITONBACKEND_Model* m, const std::string& name,
                                         std::string* error = nullptr) {
  WARDEN_InstanceDesc d{};
  d.name = name.c_str();
  d.kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
  d.host_policy_name = "cpu";
  TRITONBACKEND_ModelInstance* inst = nullptr;
  std::string msg = TakeMessage(WARDEN_InstanceNew(m, &d, &inst));
  if (!msg.empty()) {
    if (error != nullptr) *error = msg;
    return nullptr;
  }
  Done init;
  WARDEN_InstanceInitialize(inst, &Done::OnDone, &init);
  init.Wait();
  if (error != nullptr) *error = init.error;
  if (!init.error.empty()) {
    Done fin;
    WARDEN_InstanceFinalize(inst, &Done::OnDone, &fin);
    fin.Wait();
    WARDEN_InstanceDelete(inst);
    return nullptr;
  }
  return inst;
}

void DeleteInstance(TRITONBACKEND_ModelInstance* inst) {
  Done fin;
  WARDEN_InstanceFinalize(inst, &Done::OnDone, &fin);
  fin.Wait();
  CHECK(fin.error.empty(), "instance finalize: %s", fin.error.c_str());
  WARDEN_InstanceDelete(inst);
}

/** Submit one batch and wait for Execute to return. */
std::string Execute(TRITONBACKEND_ModelInstance* inst, std::vector<Call*>& calls, WARDEN_ExecStats* stats = nullptr) {
  std::vector<WARDEN_RequestDesc> descs;
  for (auto* c : calls) descs.push_back(c->Desc());
  Done done;
  std::string submit =
      TakeMessage(WARDEN_InstanceExecute(inst, descs.data(), uint32_t(descs.size()), &Done::OnExec, &done));
  if (!submit.empty()) return "submit: " + submit;
  done.Wait();
  if (stats != nullptr) *stats = done.stats;
  return done.error;
}

void ExpectOnce(Call& c, const char* what) {
  CHECK(c.Wait(), "%s: request %s did not complete", what, c.id.c_str());
  std::lock_guard<std::mutex> lk(c.mu);
  CHECK(c.finals == 1, "%s: request %s got %d FINAL responses", what, c.id.c_str(), c.finals);
  CHECK(c.releases == 1, "%s: request %s released %d times", what, c.id.c_str(), c.releases);
}

Tensor Random(std::mt19937& rng, const std::string& name, TRITONSERVER_DataType dt, std::vector<int64_t> shape) {
  Tensor t{name, dt, shape, {}};
  size_t elements = 1;
  for (auto d : shape) elements *= size_t(d);
  if (dt == TRITONSERVER_TYPE_BYTES) {
    for (size_t i = 0; i < elements; ++i) {  // [u32 length][bytes] per element
      uint32_t len = rng() % 9;
      for (int b = 0; b < 4; ++b) t.data.push_back(uint8_t(len >> (8 * b)));
      for (uint32_t k = 0; k < len; ++k) t.data.push_back(uint8_t('a' + rng() % 26));
    }
  } else {
    t.data.resize(elements * TRITONSERVER_DataTypeByteSize(dt));
    for (auto& b : t.data) b = uint8_t(rng());
  }
  return t;
}

// ---------------------------------------------------------------- identity: N requests, batched

void RunIdentity(const std::string& dir, int total) {
  TRITONBACKEND_Backend* be = LoadBackend(dir, "warden_identity");
  CHECK(be != nullptr, "identity backend did not load");
  if (be == nullptr) return;
  bool parallel = false;
  TakeMessage(WARDEN_BackendAttributes(be, &parallel, nullptr, nullptr));
  CHECK(parallel, "identity sets the parallel instance loading attribute");
  {
    // Memory manager: CPU works; pinned and GPU memory are UNSUPPORTED without CUDA.
    TRITONBACKEND_MemoryManager* mm = nullptr;
    TakeMessage(TRITONBACKEND_BackendMemoryManager(be, &mm));
    void* p = nullptr;
    CHECK(TakeMessage(TRITONBACKEND_MemoryManagerAllocate(mm, &p, TRITONSERVER_MEMORY_CPU, 0, 1000)).empty() && p,
          "CPU alloc");
    std::memset(p, 1, 1000);
    CHECK(TakeMessage(TRITONBACKEND_MemoryManagerFree(mm, p, TRITONSERVER_MEMORY_CPU, 0)).empty(), "CPU free");
    for (TRITONSERVER_MemoryType t : {TRITONSERVER_MEMORY_GPU, TRITONSERVER_MEMORY_CPU_PINNED}) {
      void* q = nullptr;
      TRITONSERVER_Error* e = TRITONBACKEND_MemoryManagerAllocate(mm, &q, t, 0, 64);
      CHECK(e != nullptr && TRITONSERVER_ErrorCode(e) == TRITONSERVER_ERROR_UNSUPPORTED && q == nullptr,
            "%s allocation is UNSUPPORTED", TRITONSERVER_MemoryTypeString(t));
      TakeMessage(e);
    }
    TRITONBACKEND_ArtifactType type;
    const char* location = nullptr;
    TakeMessage(TRITONBACKEND_BackendArtifacts(be, &type, &location));
    CHECK(type == TRITONBACKEND_ARTIFACT_FILESYSTEM && std::string(location) == dir + "/warden_identity",
          "artifacts: %s", location);
  }
  const std::string config =
      "{\"name\":\"identity_batch\",\"backend\":\"warden_identity\",\"max_batch_size\":8,"
      "\"input\":[{\"name\":\"INPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[-1],\"optional\":false}],"
      "\"output\":[{\"name\":\"OUTPUT0\",\"data_type\":\"TYPE_FP32\",\"dims\":[-1]}],"
      "\"parameters\":{\"execute_delay_ms\":{\"string_value\":\"0\"}},\"default_model_filename\":\"\"}";
  TRITONBACKEND_Model* m = LoadModel(be, "identity_batch", config, {"OUTPUT0"}, false);
  CHECK(m != nullptr, "identity model did not load");
  std::vector<TRITONBACKEND_ModelInstance*> insts = {NewInstance(m, "identity_batch_0_0"),
                                                     NewInstance(m, "identity_batch_0_1")};
  std::mt19937 rng(42);
  const TRITONSERVER_DataType types[] = {TRITONSERVER_TYPE_FP32,  TRITONSERVER_TYPE_BOOL, TRITONSERVER_TYPE_UINT8,
                                         TRITONSERVER_TYPE_INT64, TRITONSERVER_TYPE_FP16, TRITONSERVER_TYPE_BF16,
                                         TRITONSERVER_TYPE_BYTES, TRITONSERVER_TYPE_FP64, TRITONSERVER_TYPE_UINT16};
  int done = 0, batches = 0, stats = 0;
  while (done < total) {
    // A wave of batches in flight on both instances, then wait for all of it.
    std::vector<std::vector<Call*>> wave;
    std::vector<Done*> execs;
    for (int w = 0; w < 32 && done < total; ++w) {
      int size = 1 + int(rng() % 4);
      std::vector<Call*> batch;
      for (int i = 0; i < size && done < total; ++i, ++done) {
        auto* c = new Call;
        c->id = "id" + std::to_string(done);
        TRITONSERVER_DataType dt = types[rng() % (sizeof types / sizeof types[0])];
        c->inputs.push_back(Random(rng, "INPUT0", dt, {1 + int64_t(rng() % 3), int64_t(rng() % 17)}));
        c->outputs.push_back("OUTPUT0");
        batch.push_back(c);
      }
      std::vector<WARDEN_RequestDesc> descs;
      for (auto* c : batch) descs.push_back(c->Desc());
      auto* d = new Done;
      TRITONBACKEND_ModelInstance* inst = insts[batches % 2];
      std::string err =
          TakeMessage(WARDEN_InstanceExecute(inst, descs.data(), uint32_t(descs.size()), &Done::OnExec, d));
      CHECK(err.empty(), "submit failed: %s", err.c_str());
      execs.push_back(d);
      wave.push_back(std::move(batch));
      ++batches;
    }
    for (size_t b = 0; b < wave.size(); ++b) {
      execs[b]->Wait();
      CHECK(execs[b]->error.empty(), "identity execute error: %s", execs[b]->error.c_str());
      uint64_t expect_batch = 0;
      for (auto* c : wave[b]) expect_batch += uint64_t(c->inputs[0].shape[0]);
      CHECK(execs[b]->stats.reported && execs[b]->stats.batch_size == expect_batch,
            "batch statistics: reported=%d batch_size=%llu expected %llu", execs[b]->stats.reported,
            (unsigned long long)execs[b]->stats.batch_size, (unsigned long long)expect_batch);
      CHECK(execs[b]->stats.compute_start_ns <= execs[b]->stats.compute_end_ns, "timestamps ordered");
      for (auto* c : wave[b]) {
        ExpectOnce(*c, "identity");
        std::lock_guard<std::mutex> lk(c->mu);
        stats += c->stats_reported ? 1 : 0;
        bool ok = c->responses.size() == 1 && !c->responses[0].has_error && c->responses[0].outputs.size() == 1;
        CHECK(ok, "identity request %s: bad response", c->id.c_str());
        if (ok) {
          const Tensor& out = c->responses[0].outputs[0];
          const Tensor& in = c->inputs[0];
          CHECK(out.name == "OUTPUT0" && out.datatype == in.datatype && out.shape == in.shape && out.data == in.data,
                "identity request %s: output differs from input", c->id.c_str());
        }
        delete c;
      }
      delete execs[b];
    }
  }
  CHECK(stats == total, "per-request statistics reported for %d of %d requests", stats, total);

  // A requested output with no matching input is a per-request INVALID_ARG, not a crash.
  Call bad;
  bad.id = "bad";
  bad.inputs.push_back(Random(rng, "INPUT0", TRITONSERVER_TYPE_FP32, {1, 3}));
  bad.outputs.push_back("OUTPUT7");
  std::vector<Call*> one = {&bad};
  CHECK(Execute(insts[0], one).empty(), "execute of a bad request returns success");
  ExpectOnce(bad, "identity bad output");
  CHECK(bad.responses.size() == 1 && bad.responses[0].has_error, "bad output name -> error response");

  for (auto* i : insts) DeleteInstance(i);
  CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "identity model unload");
  CHECK(TakeMessage(WARDEN_BackendUnload(be)).empty(), "identity backend unload");
  std::printf("identity: %d requests in %d batches on 2 instances OK\n", total, batches);
}

// ---------------------------------------------------------------- add_sub

void RunAddSub(const std::string& dir, int total) {
  TRITONBACKEND_Backend* be = LoadBackend(dir, "warden_add_sub");
  CHECK(be != nullptr, "add_sub backend did not load");
  if (be == nullptr) return;
  TRITONBACKEND_Model* m = LoadModel(be, "add_sub_native", "{\"max_batch_size\":0}", {"OUTPUT0", "OUTPUT1"}, false);
  TRITONBACKEND_ModelInstance* inst = NewInstance(m, "add_sub_native_0_0");
  std::mt19937 rng(7);
  for (int r = 0; r < total; ++r) {
    Call c;
    c.id = std::to_string(r);
    int64_t n = int64_t(rng() % 32);
    bool mismatch = r % 50 == 49;
    c.inputs.push_back(Random(rng, "INPUT0", TRITONSERVER_TYPE_FP32, {n}));
    c.inputs.push_back(Random(rng, "INPUT1", TRITONSERVER_TYPE_FP32, {mismatch ? n + 1 : n}));
    for (auto& t : c.inputs) {  // finite floats
      auto* f = reinterpret_cast<float*>(t.data.data());
      for (size_t i = 0; i < t.data.size() / 4; ++i) f[i] = float(rng() % 1000) / 8.0f;
    }
    if (r % 3 == 0)
      c.outputs = {"OUTPUT1"};
    else
      c.outputs = {"OUTPUT0", "OUTPUT1"};
    std::vector<Call*> one = {&c};
    CHECK(Execute(inst, one).empty(), "add_sub execute");
    ExpectOnce(c, "add_sub");
    if (mismatch) {
      CHECK(
          c.responses.size() == 1 && c.responses[0].has_error && c.responses[0].code == TRITONSERVER_ERROR_INVALID_ARG,
          "add_sub shape mismatch -> INVALID_ARG");
      continue;
    }
    bool ok = c.responses.size() == 1 && !c.responses[0].has_error && c.responses[0].outputs.size() == c.outputs.size();
    CHECK(ok, "add_sub request %d: bad response", r);
    if (!ok) continue;
    const float* a = reinterpret_cast<const float*>(c.inputs[0].data.data());
    const float* b = reinterpret_cast<const float*>(c.inputs[1].data.data());
    for (const Tensor& out : c.responses[0].outputs) {
      bool sum = out.name == "OUTPUT0";
      const float* o = reinterpret_cast<const float*>(out.data.data());
      CHECK(out.data.size() == size_t(n) * 4, "add_sub output size");
      for (int64_t i = 0; i < n && out.data.size() == size_t(n) * 4; ++i) {
        float expect = sum ? a[i] + b[i] : a[i] - b[i];
        if (o[i] != expect) {
          CHECK(false, "add_sub %s[%lld] = %f, expected %f", out.name.c_str(), (long long)i, o[i], expect);
          break;
        }
      }
    }
  }
  DeleteInstance(inst);
  CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "add_sub model unload");
  CHECK(TakeMessage(WARDEN_BackendUnload(be)).empty(), "add_sub backend unload");
  std::printf("add_sub: %d requests OK\n", total);
}

// ---------------------------------------------------------------- repeat (decoupled)

void RunRepeat(const std::string& dir, int total) {
  TRITONBACKEND_Backend* be = LoadBackend(dir, "warden_repeat");
  CHECK(be != nullptr, "repeat backend did not load");
  if (be == nullptr) return;
  std::string err;
  TRITONBACKEND_Model* bad = LoadModel(be, "repeat_plain", "{\"max_batch_size\":0}", {"OUT", "IDX"}, false, &err);
  CHECK(bad == nullptr && err.find("decoupled") != std::string::npos, "repeat refuses a non-decoupled model: %s",
        err.c_str());
  TRITONBACKEND_Model* m =
      LoadModel(be, "repeat_native", "{\"max_batch_size\":0,\"model_transaction_policy\":{\"decoupled\":true}}",
                {"OUT", "IDX"}, true);
  TRITONBACKEND_ModelInstance* inst = NewInstance(m, "repeat_native_0_0");
  std::mt19937 rng(3);
  int sent = 0;
  for (int r = 0; r < total; r += 8) {
    std::vector<Call*> batch;
    for (int k = 0; k < 8 && r + k < total; ++k) {
      auto* c = new Call;
      c->id = std::to_string(r + k);
      int64_t n = int64_t(rng() % 5);
      Tensor in{"IN", TRITONSERVER_TYPE_INT32, {n}, std::vector<uint8_t>(size_t(n) * 4)};
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = int32_t(rng());
        std::memcpy(&in.data[size_t(i) * 4], &v, 4);
      }
      Tensor delay{"DELAY", TRITONSERVER_TYPE_UINT32, {n}, std::vector<uint8_t>(size_t(n) * 4, 0)};
      if (n > 0 && k == 0) delay.data[0] = 1;  // 1 ms
      Tensor wait{"WAIT", TRITONSERVER_TYPE_UINT32, {1}, std::vector<uint8_t>(4, 0)};
      wait.data[0] = uint8_t(k % 3);  // release after 0-2 ms, maybe before the last response
      c->inputs = {in, delay, wait};
      c->outputs = {"OUT", "IDX"};
      batch.push_back(c);
    }
    CHECK(Execute(inst, batch).empty(), "repeat execute");
    for (auto* c : batch) {
      ExpectOnce(*c, "repeat");
      std::lock_guard<std::mutex> lk(c->mu);
      size_t n = c->inputs[0].data.size() / 4;
      CHECK(c->null_final, "repeat: FINAL arrives flags-only");
      CHECK(c->responses.size() == n, "repeat: %zu responses for %zu elements", c->responses.size(), n);
      for (size_t i = 0; i < c->responses.size() && i < n; ++i) {
        const Response& resp = c->responses[i];
        bool ok = !resp.has_error && resp.outputs.size() == 2 && resp.outputs[0].data.size() == 4 &&
                  resp.outputs[1].data.size() == 4;
        CHECK(ok, "repeat response %zu malformed", i);
        if (!ok) continue;
        CHECK(std::memcmp(resp.outputs[0].data.data(), &c->inputs[0].data[i * 4], 4) == 0, "repeat OUT[%zu]", i);
        uint32_t idx;
        std::memcpy(&idx, resp.outputs[1].data.data(), 4);
        CHECK(idx == i, "repeat IDX %u != %zu (out of order)", idx, i);
      }
      sent += int(c->responses.size());
      delete c;
    }
  }
  // Wrong input types -> error as the (only) final response.
  Call wrong;
  wrong.id = "wrong";
  wrong.inputs = {Tensor{"IN", TRITONSERVER_TYPE_FP32, {1}, std::vector<uint8_t>(4)},
                  Tensor{"DELAY", TRITONSERVER_TYPE_UINT32, {1}, std::vector<uint8_t>(4)},
                  Tensor{"WAIT", TRITONSERVER_TYPE_UINT32, {1}, std::vector<uint8_t>(4)}};
  wrong.outputs = {"OUT"};
  std::vector<Call*> one = {&wrong};
  CHECK(Execute(inst, one).empty(), "repeat execute (wrong types)");
  ExpectOnce(wrong, "repeat wrong");
  CHECK(wrong.responses.size() == 1 && wrong.responses[0].has_error, "repeat: wrong IN type -> error");
  DeleteInstance(inst);
  CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "repeat model unload");
  CHECK(TakeMessage(WARDEN_BackendUnload(be)).empty(), "repeat backend unload");
  std::printf("repeat: %d decoupled requests, %d streamed responses OK\n", total, sent);
}

// ---------------------------------------------------------------- broken backends

void RunFailures(const std::string& test_dir, int per_mode) {
  std::string err;
  CHECK(LoadBackend(test_dir, "warden_test_init_fail", &err) == nullptr &&
            err.find("refused to start") != std::string::npos,
        "init_fail: %s", err.c_str());
  CHECK(LoadBackend(test_dir, "warden_test_no_execute", &err) == nullptr &&
            err.find("TRITONBACKEND_ModelInstanceExecute") != std::string::npos,
        "no_execute: %s", err.c_str());
  CHECK(LoadBackend(test_dir, "warden_test_missing_symbol", &err) == nullptr &&
            err.find("TRITONSERVER_WardenTestMissingFunction") != std::string::npos,
        "missing_symbol: %s", err.c_str());
  CHECK(LoadBackend(test_dir, "warden_no_such_backend", &err) == nullptr &&
            err.find("unable to load backend library") != std::string::npos,
        "absent library: %s", err.c_str());

  TRITONBACKEND_Backend* be = LoadBackend(test_dir, "warden_test_errors", &err);
  CHECK(be != nullptr, "errors backend: %s", err.c_str());
  if (be == nullptr) return;
  auto config = [](const std::string& mode) {
    return "{\"max_batch_size\":0,\"parameters\":{\"mode\":{\"string_value\":\"" + mode + "\"}}}";
  };
  CHECK(LoadModel(be, "e", config("model_initialize"), {"OUTPUT0"}, false, &err) == nullptr &&
            err.find("ModelInitialize failed on purpose") != std::string::npos,
        "model_initialize: %s", err.c_str());
  {
    TRITONBACKEND_Model* m = LoadModel(be, "e", config("instance_initialize"), {"OUTPUT0"}, false);
    CHECK(NewInstance(m, "e_0", &err) == nullptr &&
              err.find("ModelInstanceInitialize failed on purpose") != std::string::npos,
          "instance_initialize: %s", err.c_str());
    CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "unload after failed instance");
  }
  struct Case {
    const char* mode;
    bool expect_error;
    TRITONSERVER_Error_Code code;
    const char* text;
  } cases[] = {
      {"execute", true, TRITONSERVER_ERROR_UNAVAILABLE, "execute failed on purpose"},
      {"error_response", true, TRITONSERVER_ERROR_INVALID_ARG, "bad request on purpose"},
      {"no_response", true, TRITONSERVER_ERROR_INTERNAL, "without sending a final response"},
      {"double_release", false, TRITONSERVER_ERROR_UNKNOWN, ""},
      {"send_after_final", false, TRITONSERVER_ERROR_UNKNOWN, ""},
  };
  for (const Case& k : cases) {
    TRITONBACKEND_Model* m = LoadModel(be, "e", config(k.mode), {"OUTPUT0"}, false);
    TRITONBACKEND_ModelInstance* inst = NewInstance(m, "e_0");
    for (int r = 0; r < per_mode; r += 2) {
      Call a, b;
      a.id = "a";
      b.id = "b";
      for (Call* c : {&a, &b}) {
        c->inputs.push_back(Tensor{"INPUT0", TRITONSERVER_TYPE_INT32, {2}, std::vector<uint8_t>(8, 7)});
        c->outputs.push_back("OUTPUT0");
      }
      std::vector<Call*> batch = {&a, &b};
      std::string exec_err = Execute(inst, batch);
      CHECK((std::string(k.mode) == "execute") == !exec_err.empty(), "%s: execute returned '%s'", k.mode,
            exec_err.c_str());
      for (Call* c : batch) {
        ExpectOnce(*c, k.mode);
        std::lock_guard<std::mutex> lk(c->mu);
        CHECK(c->responses.size() == 1, "%s: %zu responses", k.mode, c->responses.size());
        if (c->responses.size() != 1) continue;
        const Response& resp = c->responses[0];
        CHECK(resp.has_error == k.expect_error, "%s: error=%d (%s)", k.mode, resp.has_error, resp.message.c_str());
        if (k.expect_error) {
          CHECK(resp.code == k.code && resp.message.find(k.text) != std::string::npos, "%s: got code %d '%s'", k.mode,
                int(resp.code), resp.message.c_str());
        } else {
          CHECK(resp.outputs.size() == 1 && resp.outputs[0].data == c->inputs[0].data, "%s: echo output", k.mode);
        }
      }
    }
    DeleteInstance(inst);
    CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "errors model unload");
  }
  CHECK(TakeMessage(WARDEN_BackendUnload(be)).empty(), "errors backend unload");
  std::printf("failures: broken backends rejected, misbehaving backend contained (%d requests/mode)\n", per_mode);
}

// ---------------------------------------------------------------- API surface

void RunApiChecks() {
  uint32_t major = 0, minor = 0;
  TakeMessage(TRITONBACKEND_ApiVersion(&major, &minor));
  CHECK(major == 1 && minor >= 19, "backend API %u.%u", major, minor);
  TRITONSERVER_ServerOptions* opts = nullptr;
  TRITONSERVER_Error* e = TRITONSERVER_ServerOptionsNew(&opts);
  CHECK(e != nullptr && TRITONSERVER_ErrorCode(e) == TRITONSERVER_ERROR_UNSUPPORTED,
        "unimplemented API returns UNSUPPORTED");
  TRITONSERVER_ErrorDelete(e);
  CHECK(std::strcmp(TRITONSERVER_DataTypeString(TRITONSERVER_TYPE_BF16), "BF16") == 0, "BF16 name");
  CHECK(TRITONSERVER_StringToDataType("BYTES") == TRITONSERVER_TYPE_BYTES, "BYTES enum");
  CHECK(TRITONSERVER_DataTypeByteSize(TRITONSERVER_TYPE_FP64) == 8, "FP64 size");

  // Custom metrics: counter, gauge, histogram, rendered as Prometheus text.
  TRITONSERVER_MetricFamily *counter = nullptr, *hist = nullptr;
  TakeMessage(TRITONSERVER_MetricFamilyNew(&counter, TRITONSERVER_METRIC_KIND_COUNTER, "driver_requests_total",
                                           "requests seen"));
  TakeMessage(TRITONSERVER_MetricFamilyNew(&hist, TRITONSERVER_METRIC_KIND_HISTOGRAM, "driver_latency_ms", "latency"));
  TRITONSERVER_Parameter* label = TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, "m\"1");
  const TRITONSERVER_Parameter* labels[] = {label};
  TRITONSERVER_Metric *c = nullptr, *h = nullptr;
  TakeMessage(TRITONSERVER_MetricNew(&c, counter, labels, 1));
  TRITONSERVER_MetricArgs* args = nullptr;
  TakeMessage(TRITONSERVER_MetricArgsNew(&args));
  double buckets[] = {1, 10};
  TakeMessage(TRITONSERVER_MetricArgsSetHistogram(args, buckets, 2));
  TakeMessage(TRITONSERVER_MetricNewWithArgs(&h, hist, labels, 1, args));
  TRITONSERVER_MetricArgsDelete(args);
  TRITONSERVER_ParameterDelete(label);
  TakeMessage(TRITONSERVER_MetricIncrement(c, 3));
  std::string neg = TakeMessage(TRITONSERVER_MetricIncrement(c, -1));
  CHECK(!neg.empty(), "counter refuses negative increments");
  TakeMessage(TRITONSERVER_MetricObserve(h, 5));
  std::string busy = TakeMessage(TRITONSERVER_MetricFamilyDelete(counter));
  CHECK(!busy.empty(), "family with live metrics cannot be deleted");
  char* text = WARDEN_CustomMetricsText();
  std::string t = text;
  std::free(text);
  CHECK(t.find("driver_requests_total{model=\"m\\\"1\"} 3") != std::string::npos, "counter text: %s", t.c_str());
  CHECK(t.find("driver_latency_ms_bucket{model=\"m\\\"1\",le=\"10\"} 1") != std::string::npos, "histogram text: %s",
        t.c_str());
  TakeMessage(TRITONSERVER_MetricDelete(c));
  TakeMessage(TRITONSERVER_MetricDelete(h));
  CHECK(TakeMessage(TRITONSERVER_MetricFamilyDelete(counter)).empty(), "family delete");
  CHECK(TakeMessage(TRITONSERVER_MetricFamilyDelete(hist)).empty(), "family delete");
}

// ---------------------------------------------------------------- BLS (in-process inference)

/** The driver as the embedding host of TRITONSERVER_ServerInferAsync: requests of the BLS backend
 *  run on an add_sub instance, synchronously inside the hook (so the response may reach the
 *  backend before ServerInferAsync returns: both orders must be safe). */
struct BlsHost {
  TRITONBACKEND_ModelInstance* target = nullptr;
  std::atomic<int> infers{0};
  std::atomic<int> queries{0};
};
BlsHost bls_host;

TRITONSERVER_Error* BlsInfer(void* userp, uint64_t owner, const WARDEN_InferRequestView* v, uint64_t token) {
  auto* host = static_cast<BlsHost*>(userp);
  host->infers++;
  if (owner != 42) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "wrong owner");
  if (std::strcmp(v->model_name, "add_sub_native") != 0) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND, "unknown model");
  }
  Call c;
  c.id = v->id;
  for (uint32_t i = 0; i < v->input_count; ++i) {
    const WARDEN_InferInputView& in = v->inputs[i];
    Tensor t{in.name, in.datatype, std::vector<int64_t>(in.shape, in.shape + in.dims_count), {}};
    for (uint32_t k = 0; k < in.chunk_count; ++k) {
      const uint8_t* p = static_cast<const uint8_t*>(in.chunks[k].base);
      t.data.insert(t.data.end(), p, p + in.chunks[k].byte_size);
    }
    if (t.data.size() != in.byte_size) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "chunk sizes");
    c.inputs.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < v->requested_output_count; ++i) c.outputs.emplace_back(v->requested_outputs[i]);
  std::vector<Call*> one = {&c};
  std::string err = Execute(host->target, one);
  if (!err.empty()) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, err.c_str());
  if (!c.Wait()) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "target did not answer");
  const Response& r = c.responses.at(0);
  WARDEN_InferResponseDesc d{};
  d.model_name = "add_sub_native";
  d.model_version = 1;
  std::vector<WARDEN_OutputDesc> outs;
  if (r.has_error) {
    d.error_code = r.code;
    d.error_message = r.message.c_str();
  } else {
    for (const Tensor& t : r.outputs) {
      outs.push_back(WARDEN_OutputDesc{t.name.c_str(), t.datatype, t.shape.data(), uint32_t(t.shape.size()),
                                       t.data.data(), uint64_t(t.data.size())});
    }
    d.outputs = outs.data();
    d.output_count = uint32_t(outs.size());
  }
  return WARDEN_InferenceRequestRespond(token, &d, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
}

void BlsCancel(void*, uint64_t) {}

TRITONSERVER_Error* BlsQuery(void* userp, uint64_t owner, WARDEN_ServerQuery q, const char* model, int64_t version,
                             const char* params, char** result) {
  static_cast<BlsHost*>(userp)->queries++;
  std::string out;
  switch (q) {
    case WARDEN_QUERY_MODEL_READY:
      out = std::strcmp(model, "add_sub_native") == 0 ? "true" : "false";
      break;
    case WARDEN_QUERY_MODEL_CONFIG:
      out = "{\"name\":\"add_sub_native\",\"model_transaction_policy\":{\"decoupled\":false}}";
      break;
    case WARDEN_QUERY_MODEL_METADATA:
      out = "{\"name\":\"add_sub_native\",\"platform\":\"driver\"}";
      break;
    default:
      break;
  }
  *result = static_cast<char*>(std::malloc(out.size() + 1));
  std::memcpy(*result, out.c_str(), out.size() + 1);
  return nullptr;
}

// ---------------------------------------------------------------- ownership on error paths

/** An allocator that fails where told to; counts buffers so every one must come back. */
struct FailingAlloc {
  bool fail_start = false;
  bool fail_query = false;
  const char* fail_alloc = nullptr;  // this output's alloc_fn fails
  bool fail_attributes = false;
  std::atomic<int> allocated{0};
  std::atomic<int> released{0};
};

TRITONSERVER_Error* FaAlloc(TRITONSERVER_ResponseAllocator*, const char* name, size_t byte_size,
                            TRITONSERVER_MemoryType, int64_t, void* userp, void** buffer, void** buffer_userp,
                            TRITONSERVER_MemoryType* actual, int64_t* actual_id) {
  auto* fa = static_cast<FailingAlloc*>(userp);
  if (fa->fail_alloc != nullptr && std::strcmp(name, fa->fail_alloc) == 0) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "driver: no memory for this output");
  }
  *buffer = std::malloc(byte_size == 0 ? 1 : byte_size);
  *buffer_userp = fa;
  *actual = TRITONSERVER_MEMORY_CPU;
  *actual_id = 0;
  fa->allocated++;
  return nullptr;
}

TRITONSERVER_Error* FaRelease(TRITONSERVER_ResponseAllocator*, void* buffer, void* buffer_userp, size_t,
                              TRITONSERVER_MemoryType, int64_t) {
  std::free(buffer);
  static_cast<FailingAlloc*>(buffer_userp)->released++;
  // An error from release_fn is the host's to delete.
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "driver: release reports an error");
}

TRITONSERVER_Error* FaStart(TRITONSERVER_ResponseAllocator*, void* userp) {
  if (static_cast<FailingAlloc*>(userp)->fail_start) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "driver: start_fn fails");
  }
  return nullptr;
}

TRITONSERVER_Error* FaQuery(TRITONSERVER_ResponseAllocator*, void* userp, const char*, size_t*,
                            TRITONSERVER_MemoryType*, int64_t*) {
  if (static_cast<FailingAlloc*>(userp)->fail_query) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "driver: query_fn fails");
  }
  return nullptr;
}

TRITONSERVER_Error* FaAttributes(TRITONSERVER_ResponseAllocator*, const char*, TRITONSERVER_BufferAttributes*,
                                 void* userp, void* buffer_userp) {
  if (static_cast<FailingAlloc*>(userp)->fail_attributes) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "driver: buffer_attributes_fn fails");
  }
  return nullptr;
}

/** What one in-process request saw, as a backend's response and release callbacks see it. */
struct InProcess {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  int responses = 0;
  std::string error;  // from TRITONSERVER_InferenceResponseError (a copy the caller deletes)
  uint32_t outputs = 0;
};

void InProcessResponse(TRITONSERVER_InferenceResponse* response, const uint32_t, void* userp) {
  auto* ip = static_cast<InProcess*>(userp);
  std::lock_guard<std::mutex> lk(ip->mu);
  if (response == nullptr) return;
  ip->responses++;
  // As python_backend's request executor: delete the error, then the response.
  if (TRITONSERVER_Error* err = TRITONSERVER_InferenceResponseError(response)) {
    ip->error = TRITONSERVER_ErrorMessage(err);
    TRITONSERVER_ErrorDelete(err);
  }
  TakeMessage(TRITONSERVER_InferenceResponseOutputCount(response, &ip->outputs));
  TakeMessage(TRITONSERVER_InferenceResponseDelete(response));
}

void InProcessRelease(TRITONSERVER_InferenceRequest* request, const uint32_t flags, void* userp) {
  auto* ip = static_cast<InProcess*>(userp);
  if (flags & TRITONSERVER_REQUEST_RELEASE_ALL) TakeMessage(TRITONSERVER_InferenceRequestDelete(request));
  std::lock_guard<std::mutex> lk(ip->mu);
  ip->released = true;
  ip->cv.notify_all();
}

/**
 * Every ownership rule of the API on its error paths (Triton's tritonserver.cc / backend_model.cc
 * as python_backend and the backend utilities rely on them), with the driver as the backend
 * calling into the host. Under ASan/LSan a buffer, error, message or request freed twice or
 * never fails the run.
 */
void RunOwnershipErrorPaths(TRITONBACKEND_Model* model) {
  TRITONSERVER_Server* server = nullptr;
  CHECK(TakeMessage(TRITONBACKEND_ModelServer(model, &server)).empty() && server != nullptr, "ModelServer");
  // TRITONBACKEND_ModelConfig: a new message the caller deletes; ModelSetConfig outside
  // ModelInitialize fails and leaves the message with the caller.
  TRITONSERVER_Message* config = nullptr;
  CHECK(TakeMessage(TRITONBACKEND_ModelConfig(model, 1, &config)).empty() && config != nullptr, "ModelConfig");
  CHECK(!TakeMessage(TRITONBACKEND_ModelConfig(model, 2, &config)).empty(), "ModelConfig version 2 refused");
  CHECK(!TakeMessage(TRITONBACKEND_ModelSetConfig(model, 1, config)).empty(), "ModelSetConfig outside initialize");
  TakeMessage(TRITONSERVER_MessageDelete(config));
  // TRITONBACKEND_BackendConfig: owned by the host, read only.
  TRITONBACKEND_Backend* backend = nullptr;
  TRITONSERVER_Message* backend_config = nullptr;
  TakeMessage(TRITONBACKEND_ModelBackend(model, &backend));
  CHECK(TakeMessage(TRITONBACKEND_BackendConfig(backend, &backend_config)).empty() && backend_config != nullptr,
        "BackendConfig");
  const char* base = nullptr;
  size_t size = 0;
  TakeMessage(TRITONSERVER_MessageSerializeToJson(backend_config, &base, &size));
  CHECK(size > 0 && base != nullptr && base[0] == '{', "BackendConfig JSON");
  // Messages, parameters and buffer attributes the caller creates are the caller's to delete.
  TRITONSERVER_Message* msg = nullptr;
  CHECK(TakeMessage(TRITONSERVER_MessageNewFromSerializedJson(&msg, "{\"a\":1}", 7)).empty(), "message new");
  TakeMessage(TRITONSERVER_MessageDelete(msg));
  TRITONSERVER_BufferAttributes* attrs = nullptr;
  TakeMessage(TRITONSERVER_BufferAttributesNew(&attrs));
  TakeMessage(TRITONSERVER_BufferAttributesDelete(attrs));
  // Server queries answer new messages the caller deletes.
  TRITONSERVER_Message* meta = nullptr;
  CHECK(TakeMessage(TRITONSERVER_ServerModelMetadata(server, "add_sub_native", -1, &meta)).empty() && meta != nullptr,
        "ServerModelMetadata");
  TakeMessage(TRITONSERVER_MessageDelete(meta));

  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  TakeMessage(TRITONSERVER_ResponseAllocatorNew(&allocator, &FaAlloc, &FaRelease, &FaStart));
  TakeMessage(TRITONSERVER_ResponseAllocatorSetQueryFunction(allocator, &FaQuery));
  TakeMessage(TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(allocator, &FaAttributes));
  const float a[4] = {1, 2, 3, 4}, b[4] = {4, 3, 2, 1};
  const int64_t shape[1] = {4};
  auto make = [&](const char* model_name, FailingAlloc* fa, InProcess* ip, bool callbacks) {
    TRITONSERVER_InferenceRequest* r = nullptr;
    TakeMessage(TRITONSERVER_InferenceRequestNew(&r, server, model_name, -1));
    TakeMessage(TRITONSERVER_InferenceRequestAddInput(r, "INPUT0", TRITONSERVER_TYPE_FP32, shape, 1));
    TakeMessage(TRITONSERVER_InferenceRequestAddInput(r, "INPUT1", TRITONSERVER_TYPE_FP32, shape, 1));
    TakeMessage(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT0", a, sizeof(a), TRITONSERVER_MEMORY_CPU, 0));
    TakeMessage(TRITONSERVER_InferenceRequestAppendInputData(r, "INPUT1", b, sizeof(b), TRITONSERVER_MEMORY_CPU, 0));
    TakeMessage(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUTPUT0"));
    TakeMessage(TRITONSERVER_InferenceRequestAddRequestedOutput(r, "OUTPUT1"));
    if (callbacks) {
      TakeMessage(TRITONSERVER_InferenceRequestSetReleaseCallback(r, &InProcessRelease, ip));
      TakeMessage(TRITONSERVER_InferenceRequestSetResponseCallback(r, allocator, fa, &InProcessResponse, ip));
    }
    return r;
  };

  // ServerInferAsync refused synchronously (no response callback; unknown model): the caller
  // keeps the request, and deleting it is its job (python_backend does).
  {
    FailingAlloc fa;
    InProcess ip;
    TRITONSERVER_InferenceRequest* r = make("add_sub_native", &fa, &ip, false);
    CHECK(!TakeMessage(TRITONSERVER_ServerInferAsync(server, r, nullptr)).empty(), "infer without callbacks refused");
    CHECK(TakeMessage(TRITONSERVER_InferenceRequestDelete(r)).empty(), "request deletable after a refused infer");
    r = make("no_such_model", &fa, &ip, true);
    std::string e = TakeMessage(TRITONSERVER_ServerInferAsync(server, r, nullptr));
    CHECK(e.find("unknown model") != std::string::npos, "unknown model refused: %s", e.c_str());
    CHECK(TakeMessage(TRITONSERVER_InferenceRequestDelete(r)).empty(), "request deletable after a refused infer");
    CHECK(!ip.released && ip.responses == 0, "a refused request gets no callbacks");
  }

  // Allocator failures: the response carries the error, every buffer already allocated goes back
  // through release_fn (whose own error the host deletes), the request is released once.
  struct AllocCase {
    const char* what;
    bool fail_start, fail_query, fail_attributes;
    const char* fail_alloc;
    const char* text;
  } cases[] = {
      {"ok", false, false, false, nullptr, ""},
      {"start_fn", true, false, false, nullptr, "start_fn fails"},
      {"query_fn", false, true, false, nullptr, "query_fn fails"},
      {"alloc_fn on OUTPUT1", false, false, false, "OUTPUT1", "no memory for this output"},
      {"buffer_attributes_fn", false, false, true, nullptr, "buffer_attributes_fn fails"},
  };
  for (const AllocCase& k : cases) {
    FailingAlloc fa;
    fa.fail_start = k.fail_start;
    fa.fail_query = k.fail_query;
    fa.fail_attributes = k.fail_attributes;
    fa.fail_alloc = k.fail_alloc;
    InProcess ip;
    TRITONSERVER_InferenceRequest* r = make("add_sub_native", &fa, &ip, true);
    std::string e = TakeMessage(TRITONSERVER_ServerInferAsync(server, r, nullptr));
    CHECK(e.empty(), "%s: infer: %s", k.what, e.c_str());
    if (!e.empty()) {
      TakeMessage(TRITONSERVER_InferenceRequestDelete(r));
      continue;
    }
    std::unique_lock<std::mutex> lk(ip.mu);
    ip.cv.wait(lk, [&] { return ip.released; });
    CHECK(ip.responses == 1, "%s: %d responses", k.what, ip.responses);
    if (k.text[0] == '\0') {
      CHECK(ip.error.empty() && ip.outputs == 2, "%s: error '%s', %u outputs", k.what, ip.error.c_str(), ip.outputs);
    } else {
      CHECK(ip.error.find(k.text) != std::string::npos && ip.outputs == 0, "%s: error '%s', %u outputs", k.what,
            ip.error.c_str(), ip.outputs);
    }
    CHECK(fa.allocated.load() == fa.released.load(), "%s: %d buffers allocated, %d released", k.what,
          fa.allocated.load(), fa.released.load());
  }
  TakeMessage(TRITONSERVER_ResponseAllocatorDelete(allocator));
  CHECK(WARDEN_InflightInferenceRequests() == 0, "ownership: in-process requests left in flight");
  std::printf("ownership: error paths of the in-process API and model queries OK\n");
}

void RunBls(const std::string& dir, int total) {
  TRITONBACKEND_Backend* add_sub = LoadBackend(dir, "warden_add_sub");
  TRITONBACKEND_Backend* bls = LoadBackend(dir, "warden_bls");
  CHECK(add_sub != nullptr && bls != nullptr, "bls: backends did not load");
  if (add_sub == nullptr || bls == nullptr) return;
  TRITONBACKEND_Model* target =
      LoadModel(add_sub, "add_sub_native", "{\"max_batch_size\":0}", {"OUTPUT0", "OUTPUT1"}, false);
  bls_host.target = NewInstance(target, "add_sub_native_0_0");
  WARDEN_ModelDesc d{};
  std::string config = "{\"max_batch_size\":0,\"parameters\":{\"target_model\":{\"string_value\":\"add_sub_native\"}}}";
  std::vector<const char*> outputs = {"OUTPUT0", "OUTPUT1"};
  d.name = "bls";
  d.version = 1;
  d.repository_path = "/nonexistent/repository";
  d.config_json = config.c_str();
  d.output_names = outputs.data();
  d.output_count = 2;
  d.server_owner = 42;
  TRITONBACKEND_Model* m = nullptr;
  CHECK(TakeMessage(WARDEN_ModelLoad(bls, &d, &m)).empty() && m != nullptr, "bls model load");
  TRITONBACKEND_ModelInstance* inst = NewInstance(m, "bls_0_0");
  CHECK(inst != nullptr, "bls instance");

  auto one_request = [&](std::mt19937& rng, bool mismatch, std::string* error) -> bool {
    Call c;
    c.id = "bls" + std::to_string(rng() % 1000);
    int64_t n = 1 + int64_t(rng() % 16);
    c.inputs.push_back(Random(rng, "INPUT0", TRITONSERVER_TYPE_FP32, {n}));
    c.inputs.push_back(Random(rng, "INPUT1", TRITONSERVER_TYPE_FP32, {mismatch ? n + 1 : n}));
    for (auto& t : c.inputs) {
      auto* f = reinterpret_cast<float*>(t.data.data());
      for (size_t i = 0; i < t.data.size() / 4; ++i) f[i] = float(rng() % 1000) / 4.0f;
    }
    c.outputs = {"OUTPUT0", "OUTPUT1"};
    std::vector<Call*> batch = {&c};
    CHECK(Execute(inst, batch).empty(), "bls execute");
    ExpectOnce(c, "bls");
    if (c.responses.size() != 1) return false;
    if (c.responses[0].has_error) {
      *error = c.responses[0].message;
      return false;
    }
    const float* a = reinterpret_cast<const float*>(c.inputs[0].data.data());
    const float* b = reinterpret_cast<const float*>(c.inputs[1].data.data());
    bool ok = c.responses[0].outputs.size() == 2;
    for (const Tensor& out : c.responses[0].outputs) {
      const float* o = reinterpret_cast<const float*>(out.data.data());
      ok = ok && out.data.size() == size_t(n) * 4;
      for (int64_t i = 0; ok && i < n; ++i) ok = o[i] == (out.name == "OUTPUT0" ? a[i] + b[i] : a[i] - b[i]);
    }
    return ok;
  };

  std::mt19937 rng(11);
  // No server attached: the backend's first in-process call fails cleanly.
  std::string error;
  CHECK(!one_request(rng, false, &error) && error.find("no server is attached") != std::string::npos,
        "bls without hooks: %s", error.c_str());
  WARDEN_ServerHooks hooks{&BlsInfer, &BlsCancel, &BlsQuery, &bls_host};
  WARDEN_SetServerHooks(&hooks);
  for (int r = 0; r < total; ++r) {
    bool mismatch = r % 25 == 24;
    error.clear();
    bool ok = one_request(rng, mismatch, &error);
    if (mismatch) {
      CHECK(!ok && error.find("shape") != std::string::npos, "bls: the target's error comes back: %s", error.c_str());
    } else {
      CHECK(ok, "bls request %d: bad response (%s)", r, error.c_str());
    }
  }
  CHECK(bls_host.infers.load() == total, "bls: %d in-process infers for %d requests", bls_host.infers.load(), total);
  RunOwnershipErrorPaths(m);
  WARDEN_SetServerHooks(nullptr);
  CHECK(WARDEN_InflightInferenceRequests() == 0, "bls: in-process requests left in flight");
  DeleteInstance(inst);
  CHECK(TakeMessage(WARDEN_ModelUnload(m)).empty(), "bls model unload");
  DeleteInstance(bls_host.target);
  CHECK(TakeMessage(WARDEN_ModelUnload(target)).empty(), "add_sub model unload");
  CHECK(TakeMessage(WARDEN_BackendUnload(bls)).empty(), "bls backend unload");
  CHECK(TakeMessage(WARDEN_BackendUnload(add_sub)).empty(), "add_sub backend unload");
  std::printf("bls: %d in-process requests through TRITONSERVER_ServerInferAsync OK\n", total);
}

std::mutex log_mu;
int error_logs = 0;
void OnLog(void*, TRITONSERVER_LogLevel level, const char* file, int line, const char* msg) {
  std::lock_guard<std::mutex> lk(log_mu);
  if (level == TRITONSERVER_LOG_ERROR) ++error_logs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <backend_dir> <test_backend_dir> [identity_requests]\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1], test_dir = argv[2];
  int total = argc > 3 ? std::atoi(argv[3]) : 10000;
  WARDEN_SetLogSink(&OnLog, nullptr, true, true, true, true);
  RunApiChecks();
  RunIdentity(dir, total);
  RunAddSub(dir, total / 10);
  RunRepeat(dir, total / 20);
  RunBls(dir, total / 20);
  RunFailures(test_dir, 100);
  WARDEN_SetLogSink(nullptr, nullptr, true, true, true, false);
  if (failures > 0) {
    std::fprintf(stderr, "FAILED: %d check(s)\n", failures);
    return 1;
  }
  std::printf("OK: all checks passed (%d error log lines from deliberately broken backends)\n", error_logs);
  return 0;
}
