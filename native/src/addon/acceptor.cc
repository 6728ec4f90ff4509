// The HTTP port's connection admission, off the JS thread (DESIGN "Multi-tenancy": connections are
// budgeted per client address before authentication).
//
// Node accepts every pending connection of a listening socket on its event loop and builds a
// `net.Socket` for each before any listener can look at it; a client that reopens thousands of
// connections a second over its per-address cap makes the loop accept, wrap and close each one
// (measured: 40–50 ms stalls per burst of ~4,000, docs/benchmarks.md). Here a native thread owns
// the listening socket instead: it accepts, keys the peer (IPv4 address; IPv6 by its /64; an
// IPv4-mapped IPv6 address as IPv4), and closes a connection over the per-address or total cap
// at once. Only admitted descriptors reach JS, in batches (one JsWake per batch), where they become
// `net.Socket`s of the HTTP server; JS gives each one back with release(id) when it closes.
//
// JS API (warden_native.Acceptor):
//   new Acceptor(fd, maxOpen, maxPerAddress, onConnections)
//     fd             a listening, non-blocking TCP socket (listenTcp / reusePortListen); owned from
//                    here on (closed by close())
//     maxOpen        connections open at once, all addresses together (≥ 1)
//     maxPerAddress  connections one address may hold (0 = no per-address cap)
//     onConnections  (batch: number[]) => void on the JS thread; batch = [fd, id, fd, id, ...]
//   release(id)      gives back the admission of connection `id` (once; unknown ids are ignored)
//   close()          stops accepting, closes the listening socket and every admitted descriptor not
//                    yet handed to JS; idempotent
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>

#include "addon.h"

namespace warden_addon {

namespace {

/** What a peer is counted under: family 4 with the IPv4 address, or 6 with the IPv6 /64. */
struct PeerKey {
  uint8_t family = 0;
  uint64_t bits = 0;
  bool operator==(const PeerKey& o) const { return family == o.family && bits == o.bits; }
};

struct PeerKeyHash {
  size_t operator()(const PeerKey& k) const { return std::hash<uint64_t>()(k.bits * 0x9E3779B97F4A7C15ULL + k.family); }
};

PeerKey KeyOf(const sockaddr_storage& ss) {
  PeerKey k;
  if (ss.ss_family == AF_INET) {
    k.family = 4;
    k.bits = ntohl(reinterpret_cast<const sockaddr_in&>(ss).sin_addr.s_addr);
  } else if (ss.ss_family == AF_INET6) {
    const uint8_t* a = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr.s6_addr;
    static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(a, kMapped, 12) == 0) {
      k.family = 4;
      k.bits = (uint64_t(a[12]) << 24) | (uint64_t(a[13]) << 16) | (uint64_t(a[14]) << 8) | a[15];
    } else {
      k.family = 6;
      for (int i = 0; i < 8; i++) k.bits = (k.bits << 8) | a[i];
    }
  }
  return k;
}

/** Closes `fd` with a reset rather than a FIN: the refused peer learns at once, no TIME_WAIT here. */
void Refuse(int fd) {
  linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

}  // namespace

/** The state the accept thread and the JS thread share. */
class AcceptorCore {
 public:
  AcceptorCore(int listen_fd, int stop_fd, int64_t max_open, int64_t max_per_address)
      : listen_fd_(listen_fd), stop_fd_(stop_fd), max_open_(max_open), max_per_address_(max_per_address) {}

  void Start(std::shared_ptr<warden::JsWake> wake) {
    wake_ = std::move(wake);
    thread_ = std::thread([this] { Run(); });
  }

  /** JS thread: the admitted descriptors not yet taken, as [fd, id, ...]. */
  std::vector<double> Take() {
    std::vector<std::pair<int, uint64_t>> batch;
    {
      std::lock_guard<std::mutex> lock(mu_);
      batch.swap(pending_);
    }
    std::vector<double> out;
    out.reserve(batch.size() * 2);
    for (auto& [fd, id] : batch) {
      out.push_back(fd);
      out.push_back(double(id));
    }
    return out;
  }

  void Release(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = admitted_.find(id);
    if (it == admitted_.end()) return;
    auto c = per_address_.find(it->second);
    if (c != per_address_.end() && --c->second <= 0) per_address_.erase(c);
    admitted_.erase(it);
  }

  /** Stops the thread and closes what JS never took (JS thread; idempotent). */
  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    uint64_t one = 1;
    ssize_t ignored = write(stop_fd_, &one, sizeof one);
    (void)ignored;
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    close(stop_fd_);
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [fd, id] : pending_) {
      close(fd);
      admitted_.erase(id);
    }
    pending_.clear();
  }

 private:
  void Run() {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    for (;;) {
      int n = poll(fds, 2, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      bool handed = false;
      for (;;) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            // Out of descriptors: the connection waits in the backlog; try again shortly rather
            // than spin on a socket that stays readable.
            usleep(10000);
          }
          break;
        }
        if (!Admit(fd, KeyOf(ss))) {
          Refuse(fd);
          continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as Node's HTTP server (noDelay)
        handed = true;
      }
      if (handed) wake_->Send();
    }
  }

  bool Admit(int fd, const PeerKey& key) {
    std::lock_guard<std::mutex> lock(mu_);
    if (int64_t(admitted_.size()) >= max_open_) return false;
    int64_t& held = per_address_[key];  // ≥ 1 once created: a refusal below never leaves a 0 entry
    if (max_per_address_ > 0 && held >= max_per_address_) return false;
    held++;
    uint64_t id = next_id_++;
    admitted_.emplace(id, key);
    pending_.emplace_back(fd, id);
    return true;
  }

  const int listen_fd_;
  const int stop_fd_;
  const int64_t max_open_;
  const int64_t max_per_address_;
  std::shared_ptr<warden::JsWake> wake_;
  std::thread thread_;
  bool stopped_ = false;  // JS thread only
  std::mutex mu_;
  std::unordered_map<PeerKey, int64_t, PeerKeyHash> per_address_;
  std::unordered_map<uint64_t, PeerKey> admitted_;
  std::vector<std::pair<int, uint64_t>> pending_;
  uint64_t next_id_ = 1;
};

Napi::FunctionReference Acceptor::constructor;

Napi::Function Acceptor::Init(Napi::Env env) {
  Napi::Function f = DefineClass(
      env, "Acceptor", {InstanceMethod("release", &Acceptor::Release), InstanceMethod("close", &Acceptor::Close)});
  constructor = Napi::Persistent(f);
  constructor.SuppressDestruct();
  return f;
}

Acceptor::Acceptor(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Acceptor>(info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsNumber() || !info[1].IsNumber() || !info[2].IsNumber() || !info[3].IsFunction()) {
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG,
                      "new Acceptor(fd: number, maxOpen: number, maxPerAddress: number, onConnections: function)");
  }
  const int fd = info[0].As<Napi::Number>().Int32Value();
  const double max_open = info[1].As<Napi::Number>().DoubleValue();
  const double max_per_address = info[2].As<Napi::Number>().DoubleValue();
  if (fd < 3) throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "Acceptor: refusing fd " + std::to_string(fd));
  if (!(max_open >= 1) || !(max_per_address >= 0))
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "Acceptor: maxOpen must be ≥ 1 and maxPerAddress ≥ 0");
  int so_accept = 0;
  socklen_t len = sizeof so_accept;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &so_accept, &len) != 0 || so_accept == 0) {
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG,
                      "Acceptor: fd " + std::to_string(fd) + " is not a listening socket");
  }
  int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0)
    throw TritonError(env, TRITONSERVER_ERROR_INTERNAL, std::string("Acceptor: eventfd: ") + std::strerror(errno));
  on_connections_ = Napi::Persistent(info[3].As<Napi::Function>());
  const auto cap = [](double x) { return x > 9e15 ? int64_t(9e15) : int64_t(x); };
  core_ = std::make_unique<AcceptorCore>(fd, stop_fd, cap(max_open), cap(max_per_address));
  AcceptorCore* core = core_.get();
  Napi::FunctionReference* callback = &on_connections_;
  wake_ = warden::JsWake::Create(env, "warden.Acceptor", [core, callback](Napi::Env env) {
    std::vector<double> batch = core->Take();
    if (batch.empty()) return;
    Napi::Array a = Napi::Array::New(env, batch.size());
    for (size_t i = 0; i < batch.size(); i++) a.Set(uint32_t(i), Napi::Number::New(env, batch[i]));
    callback->Call({a});
  });
  wake_->Ref();  // a listening port keeps the process alive, as Node's own listener does
  core_->Start(wake_);
}

Acceptor::~Acceptor() { Shutdown(); }

void Acceptor::Shutdown() {
  if (!core_) return;
  core_->Stop();  // joins the thread: no Send() after this
  if (wake_) {
    wake_->Unref();
    wake_->Close();
    wake_.reset();
  }
}

Napi::Value Acceptor::Release(const Napi::CallbackInfo& info) {
  if (info.Length() >= 1 && info[0].IsNumber() && core_)
    core_->Release(uint64_t(info[0].As<Napi::Number>().DoubleValue()));
  return info.Env().Undefined();
}

Napi::Value Acceptor::Close(const Napi::CallbackInfo& info) {
  Shutdown();
  return info.Env().Undefined();
}

}  // namespace warden_addon
