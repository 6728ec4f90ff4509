// The isolation ring: a single-producer / single-consumer byte ring in a shared
// memory region between Warden and a backend-host process, carrying fixed-layout binary records
// (no V8 serialisation). The TypeScript side of the same layout is
// host/src/backends/native/isolation/ring.ts; keep the two in step.
//
// Region layout (little-endian):
//   [0, 4)     u32 head: where the producer writes next (producer stores, release)
//   [64, 68)   u32 tail: where the consumer reads next (consumer stores, release)
//   [128, 128 + cap)  records; cap = (region bytes - 128) rounded down to a multiple of 8
// head == tail: empty. The producer keeps at least 8 bytes free, so a full ring never looks empty.
// Doorbell: after publishing a record the producer rings only if the consumer had consumed
// everything before it (tail == the head before the record); otherwise the consumer is still
// draining and will see the record (it re-reads head after each tail store before it stops).
// A record: u32 len (total bytes, a multiple of 8, >= 8), u32 kind, payload. A record never
// crosses the end of the ring: the producer writes a kPad record to the end first and goes on at 0.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace warden_addon {
namespace iso {

constexpr uint32_t kHeaderBytes = 128;
constexpr uint32_t kHeadOffset = 0;
constexpr uint32_t kTailOffset = 64;

enum Kind : uint32_t {
  kPad = 0,
  kExecute = 1,   // parent → child: u32 instance, u32 job, u32 count, count × request
  kResponse = 2,  // child → parent: u32 token, u32 flags, u8 what (0 none, 1 error, 2 outputs), ...
  kReleased = 3,  // child → parent: u32 token
  kExecDone = 4,  // child → parent: u32 job, u8 error?, [u32 code, str], u8 reported, u64 × 3 ns
};

enum ParamType : uint8_t { kParamString = 0, kParamInt = 1, kParamBool = 2, kParamDouble = 3 };

inline uint32_t Align8(uint64_t n) { return uint32_t((n + 7) & ~uint64_t(7)); }

/** One direction's region as mapped in this process. */
struct Ring {
  uint8_t* base = nullptr;
  uint32_t cap = 0;
  bool Init(void* region, size_t bytes) {
    if (bytes < kHeaderBytes + 64 || bytes > (size_t(1) << 31)) return false;
    base = static_cast<uint8_t*>(region);
    cap = uint32_t((bytes - kHeaderBytes) & ~size_t(7));
    return true;
  }
  uint32_t* head() const { return reinterpret_cast<uint32_t*>(base + kHeadOffset); }
  uint32_t* tail() const { return reinterpret_cast<uint32_t*>(base + kTailOffset); }
  uint8_t* data() const { return base + kHeaderBytes; }
  // Sequentially consistent (as JS Atomics): the doorbell is skipped when the consumer has not
  // caught up yet, which needs "publish head, then read tail" / "store tail, then read head" to
  // be ordered on both sides (see Emit in iso_server.cc and RingWriter.write in ring.ts).
  uint32_t LoadHead() const { return __atomic_load_n(head(), __ATOMIC_SEQ_CST); }
  uint32_t LoadTail() const { return __atomic_load_n(tail(), __ATOMIC_SEQ_CST); }
  void StoreHead(uint32_t v) const { __atomic_store_n(head(), v, __ATOMIC_SEQ_CST); }
  void StoreTail(uint32_t v) const { __atomic_store_n(tail(), v, __ATOMIC_SEQ_CST); }
};

/** Bounds-checked reader over one record's payload: any read past the end sets !ok and yields 0/"". */
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  size_t left() const { return ok_ ? n_ - pos_ : 0; }
  const uint8_t* Take(size_t n) {
    if (!ok_ || n > n_ - pos_) {
      ok_ = false;
      return nullptr;
    }
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  template <typename T>
  T Get() {
    T v{};
    if (const uint8_t* at = Take(sizeof(T))) std::memcpy(&v, at, sizeof(T));
    return v;
  }
  std::string Str() {
    uint32_t n = Get<uint32_t>();
    const uint8_t* at = Take(n);
    return at == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(at), n);
  }
  /** Skip to the next multiple of 8 (tensor data is 8-aligned within a record). */
  void Align() {
    size_t a = (pos_ + 7) & ~size_t(7);
    if (a > n_)
      ok_ = false;
    else
      pos_ = a;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

/** Writer into a record already reserved at `p` (sizes were computed first: no checks). */
class Writer {
 public:
  explicit Writer(uint8_t* p) : p_(p) {}
  template <typename T>
  void Put(T v) {
    std::memcpy(p_ + pos_, &v, sizeof(T));
    pos_ += sizeof(T);
  }
  void Bytes(const void* d, size_t n) {
    if (n > 0) std::memcpy(p_ + pos_, d, n);
    pos_ += n;
  }
  void Str(const char* s, size_t n) {
    Put<uint32_t>(uint32_t(n));
    Bytes(s, n);
  }
  void Align() {
    size_t a = (pos_ + 7) & ~size_t(7);
    while (pos_ < a) p_[pos_++] = 0;
  }
  size_t pos() const { return pos_; }

 private:
  uint8_t* p_;
  size_t pos_ = 0;
};

}  // namespace iso
}  // namespace warden_addon
