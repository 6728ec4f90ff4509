// POSIX shared memory for backend-host processes (crash isolation): a region created by the
// server and mapped by one backend-host process, seen from JS as an ArrayBuffer over the mapping
// (host/src/backends/native/isolation/ring.ts carries requests and tensors through it).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "addon.h"

namespace warden_addon {

namespace {

constexpr double kMaxBytes = 1024.0 * 1024 * 1024;  // 1 GiB per region

/** Names this addon makes: "/warden-<pid>-<n>-<random hex>"; anything else is refused on open. */
bool ValidName(const std::string& name) {
  if (name.size() < 9 || name.size() > 64 || name.compare(0, 8, "/warden-") != 0) return false;
  for (size_t i = 8; i < name.size(); ++i) {
    char c = name[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

Napi::ArrayBuffer Map(Napi::Env env, int fd, size_t size, const std::string& what) {
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (p == MAP_FAILED)
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, what + ": mmap failed: " + std::strerror(err));
  return Napi::ArrayBuffer::New(
      env, p, size,
      [](Napi::Env, void* data, size_t* len) {
        munmap(data, *len);
        delete len;
      },
      new size_t(size));
}

size_t SizeArg(Napi::Env env, Napi::Value v) {
  double d = v.ToNumber().DoubleValue();
  if (!(d >= 1 && d <= kMaxBytes) || d != double(size_t(d))) {
    throw Napi::RangeError::New(env, "shared memory size must be an integer in [1, 1 GiB]");
  }
  return size_t(d);
}

}  // namespace

/** shmCreate(bytes) -> {name, buffer}: a new region (mode 0600), mapped; unlink it once opened. */
Napi::Value ShmCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  size_t size = SizeArg(env, info[0]);
  static std::atomic<uint64_t> counter{0};
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08x%08x", rd(), rd());
  std::string name = "/warden-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + hex;
  int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, std::string("shm_open failed: ") + std::strerror(errno));
  if (ftruncate(fd, off_t(size)) != 0) {
    int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    throw TritonError(env, TRITONSERVER_ERROR_UNAVAILABLE, std::string("ftruncate failed: ") + std::strerror(err));
  }
  Napi::ArrayBuffer buf;
  try {
    buf = Map(env, fd, size, "shmCreate");
  } catch (...) {
    shm_unlink(name.c_str());
    throw;
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", name);
  o.Set("buffer", buf);
  return o;
}

/** shmOpen(name, bytes) -> ArrayBuffer: map a region shmCreate made (its size must match). */
Napi::Value ShmOpen(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string name = info[0].ToString().Utf8Value();
  size_t size = SizeArg(env, info[1]);
  if (!ValidName(name))
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "not a Warden shared memory region name");
  int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0)
    throw TritonError(env, TRITONSERVER_ERROR_NOT_FOUND, std::string("shm_open failed: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || size_t(st.st_size) != size) {
    close(fd);
    throw TritonError(env, TRITONSERVER_ERROR_INVALID_ARG, "shared memory region has another size");
  }
  return Map(env, fd, size, "shmOpen");
}

/** shmUnlink(name): remove the name (mappings stay valid). */
Napi::Value ShmUnlink(const Napi::CallbackInfo& info) {
  std::string name = info[0].ToString().Utf8Value();
  if (ValidName(name)) shm_unlink(name.c_str());
  return info.Env().Undefined();
}

}  // namespace warden_addon
