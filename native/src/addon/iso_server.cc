// The backend-host process's request path: a native thread reads Execute
// records from the parent's ring (iso_ring.h), submits them with WARDEN_InstanceExecute, and the
// backend's responses, releases and Execute completions are written as records into the ring back
// to the parent from whatever thread the backend uses — no JS and no V8 serialisation on the way.
// A doorbell byte on a socket shared with the parent (fd 4 of the child) says "records waiting".
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <thread>

#include "addon.h"
#include "iso_ring.h"

namespace warden_addon {

class IsoServerCore;

namespace {

using iso::Reader;
using iso::Ring;
using iso::Writer;

/** A copied request: everything WARDEN_RequestDesc points at; inputs live until release. */
struct IsoRequest {
  IsoServerCore* core = nullptr;
  uint32_t instance = 0;
  uint32_t token = 0;
  std::atomic<int> remaining{2};  // FINAL + release
  std::string id, corr;
  std::deque<std::string> strings;
  std::deque<std::vector<int64_t>> shapes;
  std::vector<std::vector<uint8_t>> data;
  std::vector<WARDEN_InputDesc> inputs;
  std::vector<const char*> outputs;
  std::vector<WARDEN_ParamDesc> params;
  WARDEN_RequestDesc desc{};
};

struct IsoJob {
  IsoServerCore* core;
  uint32_t job;
};

struct IsoInstance {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  int64_t outstanding = 0;  // requests submitted and not yet released (under mu)
};

}  // namespace

class IsoServerCore {
 public:
  Ring in, out;
  int fd = -1;       // doorbell socket shared with the parent
  int stop_fd = -1;  // eventfd: wakes the reader thread to stop
  std::atomic<bool> stopping{false};
  std::mutex out_mu;  // one producer at a time into `out`
  std::mutex mu;      // instances
  std::map<uint32_t, IsoInstance> instances;
  std::thread reader;
  std::atomic<uint64_t> skipped_doorbells{0};
  /** The reader thread's kernel id: the parent places it on its CPU before a doorbell (wake.cc). */
  std::atomic<int> reader_tid{0};

  void Run() {
    reader_tid.store(int(syscall(SYS_gettid)));
    pollfd fds[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    uint8_t sink[256];
    while (!stopping.load()) {
      int n = poll(fds, 2, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) return;  // the parent is gone
      ssize_t r = read(fd, sink, sizeof sink);
      if (r == 0) return;
      // The parent may have moved this thread onto its CPU to ring: take the whole mask back.
      WARDEN_WakeAffinityRestore();
      Drain();
    }
  }

  /** Consume every Execute record the parent wrote. */
  void Drain() {
    uint32_t tail = in.LoadTail();
    for (;;) {
      uint32_t head = in.LoadHead();
      if (tail == head) return;
      if (head >= in.cap || tail >= in.cap || (tail & 7) != 0) return;  // parent is trusted; stay safe anyway
      uint32_t avail = head > tail ? head - tail : in.cap - tail;
      if (avail < 8) return;
      const uint8_t* rec = in.data() + tail;
      uint32_t len, kind;
      std::memcpy(&len, rec, 4);
      std::memcpy(&kind, rec + 4, 4);
      if (len < 8 || (len & 7) != 0 || len > avail) return;
      if (kind == iso::kExecute) Execute(Reader(rec + 8, len - 8));
      tail = tail + len == in.cap ? 0 : tail + len;
      in.StoreTail(tail);
    }
  }

  void Execute(Reader rd) {
    uint32_t instance = rd.Get<uint32_t>();
    uint32_t job = rd.Get<uint32_t>();
    uint32_t count = rd.Get<uint32_t>();
    if (!rd.ok() || count == 0 || count > rd.left()) {
      SendExecDone(job, TRITONSERVER_ERROR_INTERNAL, "malformed Execute record", nullptr);
      return;
    }
    std::vector<IsoRequest*> reqs;
    std::vector<WARDEN_RequestDesc> descs;
    for (uint32_t i = 0; i < count && rd.ok(); ++i) {
      auto* q = new IsoRequest();
      reqs.push_back(q);
      q->core = this;
      q->instance = instance;
      Parse(rd, q);
      descs.push_back(q->desc);
    }
    if (!rd.ok()) {
      for (auto* q : reqs) delete q;
      SendExecDone(job, TRITONSERVER_ERROR_INTERNAL, "malformed Execute record", nullptr);
      return;
    }
    std::lock_guard<std::mutex> lk(mu);
    auto it = instances.find(instance);
    TRITONSERVER_Error* err = nullptr;
    if (it == instances.end()) {
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "no such instance in the backend host process");
    } else {
      it->second.outstanding += int64_t(count);
      err = WARDEN_InstanceExecute(it->second.instance, descs.data(), count, &OnExecDone, new IsoJob{this, job});
      if (err != nullptr) it->second.outstanding -= int64_t(count);
    }
    if (err != nullptr) {  // nothing was submitted: no callbacks will come
      for (auto* q : reqs) delete q;
      SendExecDone(job, TRITONSERVER_ErrorCode(err), TRITONSERVER_ErrorMessage(err), nullptr);
      TRITONSERVER_ErrorDelete(err);
    }
  }

  static const char* Keep(IsoRequest* q, std::string s) {
    q->strings.push_back(std::move(s));
    return q->strings.back().c_str();
  }

  static void Parse(Reader& rd, IsoRequest* q) {
    WARDEN_RequestDesc& d = q->desc;
    q->token = rd.Get<uint32_t>();
    q->id = rd.Str();
    d.id = q->id.c_str();
    if (rd.Get<uint8_t>() == 1) {
      q->corr = rd.Str();
      d.correlation_id_string = q->corr.c_str();
    } else {
      d.correlation_id = rd.Get<uint64_t>();
    }
    d.flags = rd.Get<uint32_t>();
    d.timeout_us = rd.Get<uint64_t>();
    d.priority = rd.Get<uint64_t>();
    d.cancelled = rd.Get<uint8_t>() != 0;
    uint32_t ninputs = rd.Get<uint32_t>();
    if (ninputs > rd.left()) return (void)rd.Take(SIZE_MAX);
    q->inputs.resize(ninputs);
    q->data.resize(ninputs);
    for (uint32_t i = 0; i < ninputs && rd.ok(); ++i) {
      WARDEN_InputDesc& in = q->inputs[i];
      in.name = Keep(q, rd.Str());
      std::string dt = rd.Str();
      in.datatype = TRITONSERVER_StringToDataType(dt.c_str());
      uint32_t dims = rd.Get<uint32_t>();
      if (dims > rd.left() / 8) return (void)rd.Take(SIZE_MAX);
      q->shapes.emplace_back(dims);
      for (uint32_t k = 0; k < dims; ++k) q->shapes.back()[k] = rd.Get<int64_t>();
      in.shape = q->shapes.back().data();
      in.dims_count = dims;
      uint64_t size = rd.Get<uint64_t>();
      rd.Align();
      const uint8_t* bytes = rd.Take(size_t(size));
      if (bytes == nullptr) return;
      q->data[i].assign(bytes, bytes + size);  // copied out: the ring slot is reused at once
      in.data = size == 0 ? nullptr : q->data[i].data();
      in.byte_size = size;
    }
    uint32_t nout = rd.Get<uint32_t>();
    if (nout > rd.left()) return (void)rd.Take(SIZE_MAX);
    for (uint32_t i = 0; i < nout && rd.ok(); ++i) q->outputs.push_back(Keep(q, rd.Str()));
    uint32_t nparams = rd.Get<uint32_t>();
    if (nparams > rd.left()) return (void)rd.Take(SIZE_MAX);
    for (uint32_t i = 0; i < nparams && rd.ok(); ++i) {
      WARDEN_ParamDesc p{};
      p.key = Keep(q, rd.Str());
      switch (rd.Get<uint8_t>()) {
        case iso::kParamString:
          p.type = TRITONSERVER_PARAMETER_STRING;
          p.string_value = Keep(q, rd.Str());
          break;
        case iso::kParamInt:
          p.type = TRITONSERVER_PARAMETER_INT;
          p.int_value = rd.Get<int64_t>();
          break;
        case iso::kParamBool:
          p.type = TRITONSERVER_PARAMETER_BOOL;
          p.bool_value = rd.Get<uint8_t>() != 0;
          break;
        default:
          p.type = TRITONSERVER_PARAMETER_DOUBLE;
          p.double_value = rd.Get<double>();
      }
      q->params.push_back(p);
    }
    d.inputs = q->inputs.data();
    d.input_count = uint32_t(q->inputs.size());
    d.requested_outputs = q->outputs.data();
    d.requested_output_count = uint32_t(q->outputs.size());
    d.parameters = q->params.data();
    d.parameter_count = uint32_t(q->params.size());
    d.response_fn = &OnResponse;
    d.release_fn = &OnRelease;
    d.userp = q;
  }

  // ------------------------------------------------------------ records to the parent

  /**
   * Reserve `bytes` (8-aligned, with the header) in `out`, let `fill` write the payload, publish
   * and ring. Waits while the parent has not consumed enough; gives up if stopping.
   * @return false if the record can never fit (larger than the ring) or the server stops
   */
  template <typename Fill>
  bool Emit(uint32_t kind, uint64_t bytes, Fill&& fill) {
    if (bytes + 8 > out.cap) return false;
    std::unique_lock<std::mutex> lk(out_mu);
    uint32_t head = out.LoadHead();
    uint32_t before = head;  // the consumer is idle if it consumed everything up to here
    for (;;) {
      uint32_t tail = out.LoadTail();
      uint32_t used = head >= tail ? head - tail : out.cap - tail + head;
      uint32_t free = out.cap - used - 8;
      uint32_t pad = head + bytes > out.cap ? out.cap - head : 0;
      if (uint64_t(pad) + bytes <= free) break;
      if (stopping.load()) return false;
      if (pad > 0 && used == 0) {
        // Empty, but the record does not fit before the end: pad to the end now and wake Warden
        // to skip it; the record then fits at the start.
        uint32_t hdr[2] = {pad, iso::kPad};
        std::memcpy(out.data() + head, hdr, 8);
        head = 0;
        before = 0;
        out.StoreHead(0);
        Doorbell();
        continue;
      }
      timespec ts{0, 20000};  // the parent drains on its event loop: wait for it
      nanosleep(&ts, nullptr);
    }
    if (head + bytes > out.cap) {
      uint32_t pad = out.cap - head;
      uint32_t hdr[2] = {pad, iso::kPad};
      std::memcpy(out.data() + head, hdr, 8);
      head = 0;
    }
    uint8_t* rec = out.data() + head;
    uint32_t hdr[2] = {uint32_t(bytes), kind};
    std::memcpy(rec, hdr, 8);
    Writer w(rec + 8);
    fill(w);
    head += uint32_t(bytes);
    if (head == out.cap) head = 0;
    out.StoreHead(head);
    bool idle = out.LoadTail() == before;  // else Warden is still draining and will see this record
    lk.unlock();
    if (idle)
      Doorbell();
    else
      skipped_doorbells.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  void Doorbell() {
    uint8_t b = 1;
    // EAGAIN: the socket is full of unread doorbells, so the parent will wake anyway.
    while (write(fd, &b, 1) < 0 && errno == EINTR) {
    }
  }

  void SendExecDone(uint32_t job, TRITONSERVER_Error_Code code, const char* message, const WARDEN_ExecStats* s) {
    size_t mlen = message == nullptr ? 0 : std::strlen(message);
    if (mlen > 65536) mlen = 65536;
    uint64_t bytes = iso::Align8(8 + 4 + 1 + (message ? 4 + mlen : 0) + 1 + 24);
    Emit(iso::kExecDone, bytes, [&](Writer& w) {
      w.Put<uint32_t>(job);
      w.Put<uint8_t>(message != nullptr);
      if (message != nullptr) {
        w.Put<uint32_t>(uint32_t(code));
        w.Str(message, mlen);
      }
      w.Put<uint8_t>(s != nullptr && s->reported);
      w.Put<uint64_t>(s ? s->compute_start_ns : 0);
      w.Put<uint64_t>(s ? s->compute_end_ns : 0);
      w.Put<uint64_t>(s ? s->returned_ns : 0);
    });
  }

  void SendResponse(uint32_t token, TRITONSERVER_InferenceResponse* r, uint32_t flags) {
    TRITONSERVER_Error* rerr = r ? TRITONSERVER_InferenceResponseError(r) : nullptr;  // ours to delete
    std::unique_ptr<TRITONSERVER_Error, void (*)(TRITONSERVER_Error*)> rerr_owner(rerr, [](TRITONSERVER_Error* e) {
      if (e != nullptr) TRITONSERVER_ErrorDelete(e);
    });
    struct Out {
      const char* name;
      const char* dt;
      const int64_t* shape;
      uint64_t dims;
      const void* base;
      size_t size;
    };
    std::vector<Out> outs;
    uint64_t bytes = 8 + 4 + 4 + 1;
    if (rerr != nullptr) {
      bytes += 4 + 4 + std::strlen(TRITONSERVER_ErrorMessage(rerr));
    } else if (r != nullptr) {
      uint32_t count = 0;
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseOutputCount(r, &count));
      bytes += 4;
      for (uint32_t i = 0; i < count; ++i) {
        Out o{};
        TRITONSERVER_DataType dt;
        TRITONSERVER_MemoryType mt;
        int64_t mt_id;
        void* userp;
        TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseOutput(r, i, &o.name, &dt, &o.shape, &o.dims, &o.base,
                                                                      &o.size, &mt, &mt_id, &userp));
        o.dt = TRITONSERVER_DataTypeString(dt);
        bytes = iso::Align8(bytes + 4 + std::strlen(o.name) + 4 + std::strlen(o.dt) + 4 + 8 * o.dims + 8) + o.size;
        outs.push_back(o);
      }
      bytes += 4;
      uint32_t pcount = 0;
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameterCount(r, &pcount));
      for (uint32_t i = 0; i < pcount; ++i) {
        const char* key = nullptr;
        TRITONSERVER_ParameterType type;
        const void* v = nullptr;
        TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameter(r, i, &key, &type, &v));
        bytes += 4 + std::strlen(key) + 1 +
                 (type == TRITONSERVER_PARAMETER_STRING ? 4 + std::strlen(static_cast<const char*>(v))
                  : type == TRITONSERVER_PARAMETER_BOOL ? 1
                                                        : 8);
      }
    }
    bytes = iso::Align8(bytes);
    bool sent = Emit(iso::kResponse, bytes, [&](Writer& w) {
      w.Put<uint32_t>(token);
      w.Put<uint32_t>(flags);
      if (rerr != nullptr) {
        w.Put<uint8_t>(1);
        w.Put<uint32_t>(uint32_t(TRITONSERVER_ErrorCode(rerr)));
        const char* m = TRITONSERVER_ErrorMessage(rerr);
        w.Str(m, std::strlen(m));
        return;
      }
      if (r == nullptr) {
        w.Put<uint8_t>(0);
        return;
      }
      w.Put<uint8_t>(2);
      w.Put<uint32_t>(uint32_t(outs.size()));
      for (const Out& o : outs) {
        w.Str(o.name, std::strlen(o.name));
        w.Str(o.dt, std::strlen(o.dt));
        w.Put<uint32_t>(uint32_t(o.dims));
        for (uint64_t k = 0; k < o.dims; ++k) w.Put<int64_t>(o.shape[k]);
        w.Put<uint64_t>(o.size);
        w.Align();
        w.Bytes(o.base, o.size);
      }
      uint32_t pcount = 0;
      TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameterCount(r, &pcount));
      w.Put<uint32_t>(pcount);
      for (uint32_t i = 0; i < pcount; ++i) {
        const char* key = nullptr;
        TRITONSERVER_ParameterType type;
        const void* v = nullptr;
        TRITONSERVER_ErrorDelete(TRITONSERVER_InferenceResponseParameter(r, i, &key, &type, &v));
        w.Str(key, std::strlen(key));
        switch (type) {
          case TRITONSERVER_PARAMETER_STRING: {
            w.Put<uint8_t>(iso::kParamString);
            const char* s = static_cast<const char*>(v);
            w.Str(s, std::strlen(s));
            break;
          }
          case TRITONSERVER_PARAMETER_BOOL:
            w.Put<uint8_t>(iso::kParamBool);
            w.Put<uint8_t>(*static_cast<const bool*>(v) ? 1 : 0);
            break;
          case TRITONSERVER_PARAMETER_DOUBLE:
            w.Put<uint8_t>(iso::kParamDouble);
            w.Put<double>(*static_cast<const double*>(v));
            break;
          default:
            w.Put<uint8_t>(iso::kParamInt);
            w.Put<int64_t>(*static_cast<const int64_t*>(v));
        }
      }
    });
    if (!sent && !stopping.load()) {
      // Larger than the whole ring: the request gets an error instead of its outputs.
      std::string m = "response of " + std::to_string(bytes) +
                      " bytes does not fit the backend host process's ring of " + std::to_string(out.cap) +
                      " bytes (raise warden.isolation_shm_bytes)";
      Emit(iso::kResponse, iso::Align8(8 + 4 + 4 + 1 + 4 + 4 + m.size()), [&](Writer& w) {
        w.Put<uint32_t>(token);
        w.Put<uint32_t>(flags);
        w.Put<uint8_t>(1);
        w.Put<uint32_t>(uint32_t(TRITONSERVER_ERROR_UNAVAILABLE));
        w.Str(m.data(), m.size());
      });
    }
  }

  void SendReleased(uint32_t token) {
    Emit(iso::kReleased, 16, [&](Writer& w) { w.Put<uint32_t>(token); });
  }

  static void Settle(IsoRequest* q) {
    if (q->remaining.fetch_sub(1) == 1) delete q;
  }

  static void OnResponse(void* userp, TRITONSERVER_InferenceResponse* response, uint32_t flags) {
    auto* q = static_cast<IsoRequest*>(userp);
    q->core->SendResponse(q->token, response, flags);
    if (response != nullptr) TRITONSERVER_InferenceResponseDelete(response);
    if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) Settle(q);
  }

  static void OnRelease(void* userp, const WARDEN_RequestStats*) {
    auto* q = static_cast<IsoRequest*>(userp);
    IsoServerCore* core = q->core;
    {
      std::lock_guard<std::mutex> lk(core->mu);
      auto it = core->instances.find(q->instance);
      if (it != core->instances.end()) it->second.outstanding--;
    }
    core->SendReleased(q->token);
    Settle(q);
  }

  static void OnExecDone(void* userp, TRITONSERVER_Error* error, const WARDEN_ExecStats* stats) {
    auto* j = static_cast<IsoJob*>(userp);
    if (error != nullptr) {
      j->core->SendExecDone(j->job, TRITONSERVER_ErrorCode(error), TRITONSERVER_ErrorMessage(error), stats);
      TRITONSERVER_ErrorDelete(error);
    } else {
      j->core->SendExecDone(j->job, TRITONSERVER_ERROR_UNKNOWN, nullptr, stats);
    }
    delete j;
  }

  void Stop() {
    if (stopping.exchange(true)) return;
    uint64_t one = 1;
    ssize_t ignored = write(stop_fd, &one, sizeof one);
    (void)ignored;
    if (reader.joinable()) reader.join();
    close(stop_fd);
  }
};

// ---------------------------------------------------------------- JS class

Napi::FunctionReference IsoServer::constructor;

Napi::Function IsoServer::Init(Napi::Env env) {
  Napi::Function f =
      DefineClass(env, "IsoServer",
                  {InstanceMethod("addInstance", &IsoServer::AddInstance),
                   InstanceMethod("removeInstance", &IsoServer::RemoveInstance),
                   InstanceMethod("outstanding", &IsoServer::Outstanding), InstanceMethod("close", &IsoServer::Close),
                   InstanceAccessor("readerTid", &IsoServer::ReaderTid, nullptr)});
  constructor = Napi::Persistent(f);
  constructor.SuppressDestruct();
  return f;
}

/** new IsoServer(fd, fromParent: ArrayBuffer, toParent: ArrayBuffer): starts the reader thread. */
IsoServer::IsoServer(const Napi::CallbackInfo& info) : Napi::ObjectWrap<IsoServer>(info) {
  Napi::Env env = info.Env();
  if (!info[0].IsNumber() || !info[1].IsArrayBuffer() || !info[2].IsArrayBuffer()) {
    throw Napi::TypeError::New(env, "IsoServer(fd, fromParent, toParent)");
  }
  core_ = std::make_unique<IsoServerCore>();
  Napi::ArrayBuffer a = info[1].As<Napi::ArrayBuffer>(), b = info[2].As<Napi::ArrayBuffer>();
  if (!core_->in.Init(a.Data(), a.ByteLength()) || !core_->out.Init(b.Data(), b.ByteLength())) {
    throw Napi::RangeError::New(env, "ring regions must be between 192 bytes and 2 GiB");
  }
  keep_in_ = Napi::Persistent(a);
  keep_out_ = Napi::Persistent(b);
  core_->fd = info[0].As<Napi::Number>().Int32Value();
  core_->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (core_->stop_fd < 0) throw Napi::Error::New(env, "eventfd failed");
  IsoServerCore* c = core_.get();
  c->reader = std::thread([c] { c->Run(); });
  while (c->reader_tid.load() == 0) std::this_thread::yield();  // readerTid() is known from here on
}

IsoServer::~IsoServer() {
  // Late responses of a decoupled backend may still reach the core from backend threads: stop the
  // reader and leave the core (and the mappings it writes into) to the process's end.
  if (core_) core_->Stop();
  core_.release();
  keep_in_.SuppressDestruct();
  keep_out_.SuppressDestruct();
}

/** addInstance(id, InstanceHandle): route Execute records for `id` to that instance. */
Napi::Value IsoServer::AddInstance(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  uint32_t id = info[0].ToNumber().Uint32Value();
  InstanceHandle* h = InstanceHandle::Unwrap(info[1].As<Napi::Object>());
  if (h == nullptr || h->instance == nullptr) throw Napi::TypeError::New(env, "addInstance(id, InstanceHandle)");
  std::lock_guard<std::mutex> lk(core_->mu);
  core_->instances[id] = IsoInstance{h->instance, 0};
  return env.Undefined();
}

/** removeInstance(id) -> requests it still holds unreleased (before Finalize). */
Napi::Value IsoServer::RemoveInstance(const Napi::CallbackInfo& info) {
  uint32_t id = info[0].ToNumber().Uint32Value();
  std::lock_guard<std::mutex> lk(core_->mu);
  auto it = core_->instances.find(id);
  int64_t n = it == core_->instances.end() ? 0 : it->second.outstanding;
  if (it != core_->instances.end()) core_->instances.erase(it);
  return Napi::Number::New(info.Env(), double(n));
}

/** outstanding(id) -> requests submitted to the instance and not yet released. */
Napi::Value IsoServer::Outstanding(const Napi::CallbackInfo& info) {
  uint32_t id = info[0].ToNumber().Uint32Value();
  std::lock_guard<std::mutex> lk(core_->mu);
  auto it = core_->instances.find(id);
  return Napi::Number::New(info.Env(), it == core_->instances.end() ? 0.0 : double(it->second.outstanding));
}

/** readerTid -> the kernel id of the thread that waits for doorbells. */
Napi::Value IsoServer::ReaderTid(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), core_->reader_tid.load());
}

Napi::Value IsoServer::Close(const Napi::CallbackInfo& info) {
  core_->Stop();
  return info.Env().Undefined();
}

}  // namespace warden_addon
