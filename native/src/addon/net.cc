// Listening TCP sockets with SO_REUSEPORT for the HTTP front-end threads: Node 20
// has no `reusePort`, so every listener of one host:port (the main thread's and each front-end
// thread's) is created here and handed to `server.listen({ fd })`. The kernel then spreads new
// connections over the group (hash of the 4-tuple).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "addon.h"

namespace warden_addon {

namespace {

/** A host name or address: printable ASCII, no spaces, at most 255 bytes (getaddrinfo's input). */
bool ValidHost(const std::string& host) {
  if (host.empty() || host.size() > 255) return false;
  for (char c : host) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

}  // namespace

// reusePortListen(host, port, backlog[, reusePort = true]) -> { fd, port }
// With reusePort false the socket is a plain listener (SO_REUSEADDR only), for the native acceptor
// (acceptor.cc) of a port no other socket shares.
Napi::Value ReusePortListen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsString() || !info[1].IsNumber() || !info[2].IsNumber()) {
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG,
                      "reusePortListen(host: string, port: number, backlog: number)");
  }
  const std::string host = info[0].As<Napi::String>().Utf8Value();
  const double port = info[1].As<Napi::Number>().DoubleValue();
  const double backlog = info[2].As<Napi::Number>().DoubleValue();
  if (!ValidHost(host)) throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "invalid listen host '" + host + "'");
  if (!(port >= 0 && port <= 65535) || port != double(int(port))) {
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "invalid listen port " + std::to_string(port));
  }
  if (!(backlog >= 1 && backlog <= 65535))
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "invalid listen backlog");
  const bool reuse_port = info.Length() < 4 || !info[3].IsBoolean() || info[3].As<Napi::Boolean>().Value();
  const std::string where = host + ":" + std::to_string(int(port));

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(int(port));
  int gai = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (gai != 0 || res == nullptr) {
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG,
                      "cannot listen on " + where + ": cannot resolve the host (" + gai_strerror(gai) + ")");
  }
  std::string failure;
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (s < 0) {
      failure = std::string("socket: ") + std::strerror(errno);
      continue;
    }
    int one = 1;
    if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        (reuse_port && setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)) {
      failure = std::string("setsockopt: ") + std::strerror(errno);
      close(s);
      continue;
    }
    if (bind(s, ai->ai_addr, ai->ai_addrlen) != 0) {
      int err = errno;
      failure = err == EADDRINUSE
                    ? (reuse_port ? "address already in use (by a socket without SO_REUSEPORT, or another user's)"
                                  : "address already in use")
                    : std::string("bind: ") + std::strerror(err);
      close(s);
      continue;
    }
    if (listen(s, int(backlog)) != 0) {
      failure = std::string("listen: ") + std::strerror(errno);
      close(s);
      continue;
    }
    fd = s;
  }
  freeaddrinfo(res);
  if (fd < 0) throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, "cannot listen on " + where + ": " + failure);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  int bound = int(port);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    bound = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("fd", Napi::Number::New(env, fd));
  o.Set("port", Napi::Number::New(env, bound));
  return o;
}

// closeFd(fd): close a descriptor reusePortListen returned that was never handed to a server.
Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber())
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "closeFd(fd: number)");
  int fd = info[0].As<Napi::Number>().Int32Value();
  if (fd < 3) throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "closeFd: refusing fd " + std::to_string(fd));
  close(fd);
  return env.Undefined();
}

}  // namespace warden_addon
