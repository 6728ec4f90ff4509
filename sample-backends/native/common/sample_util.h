/*
 * Helpers shared by Warden's sample native backends (C, against warden/tritonbackend.h).
 *
 *  - sample_json_lookup: find the raw JSON text of a value by object path in the model config
 *    TRITONBACKEND_ModelConfig returns (enough for the few fields samples read; not a general
 *    JSON library).
 *  - sample_respond_error: send one FINAL error response for a request (backend keeps the error).
 *  - sample_read_tensor: a fixed-size input of one datatype, checked and copied out.
 *  - sample_finish_request: end one request of a per-request execute loop (error response,
 *    statistics, release); sample_execute_each: that loop, around a per-request function.
 *  - sample_now_ns: CLOCK_MONOTONIC nanoseconds, the clock the host uses for statistics.
 */
#ifndef WARDEN_SAMPLE_UTIL_H
#define WARDEN_SAMPLE_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "warden/tritonbackend.h"

#define SAMPLE_LOG(level, ...)                                       \
  do {                                                               \
    char sample_log_buf_[512];                                       \
    snprintf(sample_log_buf_, sizeof sample_log_buf_, __VA_ARGS__);  \
    TRITONSERVER_LogMessage(level, __FILE__, __LINE__, sample_log_buf_); \
  } while (0)

/* Return the error from `expr` (a TRITONSERVER_Error*) if it is not NULL. */
#define SAMPLE_RETURN_IF_ERROR(expr)        \
  do {                                      \
    TRITONSERVER_Error* sample_err_ = (expr); \
    if (sample_err_ != NULL) return sample_err_; \
  } while (0)

static inline uint64_t sample_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sample_sleep_ms(uint64_t ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000);
  ts.tv_nsec = (long)((ms % 1000) * 1000000);
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* ---- minimal JSON walking ---------------------------------------------------------------- */

static inline const char* sample_json_ws(const char* p, const char* end) {
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  return p;
}

/* Skip one JSON value starting at p; returns the position after it, or NULL if malformed. */
static inline const char* sample_json_skip(const char* p, const char* end) {
  p = sample_json_ws(p, end);
  if (p >= end) return NULL;
  if (*p == '"') {
    for (++p; p < end; ++p) {
      if (*p == '\\') {
        ++p;
      } else if (*p == '"') {
        return p + 1;
      }
    }
    return NULL;
  }
  if (*p == '{' || *p == '[') {
    char close = (*p == '{') ? '}' : ']';
    p = sample_json_ws(p + 1, end);
    if (p < end && *p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        p = sample_json_skip(p, end); /* key */
        if (p == NULL) return NULL;
        p = sample_json_ws(p, end);
        if (p >= end || *p != ':') return NULL;
        ++p;
      }
      p = sample_json_skip(p, end);
      if (p == NULL) return NULL;
      p = sample_json_ws(p, end);
      if (p >= end) return NULL;
      if (*p == ',') {
        ++p;
        continue;
      }
      if (*p == close) return p + 1;
      return NULL;
    }
  }
  /* number, true, false, null */
  while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' &&
         *p != '\r' && *p != '\t')
    ++p;
  return p;
}

/* Find the value at `path` (object keys, `depth` of them). On success *start and *len delimit the raw
 * value text (strings include their quotes). Returns 1 if found, 0 if not or malformed. */
static inline int sample_json_lookup(const char* json, size_t json_len, const char* const* path,
                              int depth, const char** start, size_t* len) {
  const char* p = json;
  const char* end = json + json_len;
  for (int d = 0; d < depth; ++d) {
    p = sample_json_ws(p, end);
    if (p >= end || *p != '{') return 0;
    p = sample_json_ws(p + 1, end);
    int found = 0;
    while (p < end && *p != '}') {
      const char* key = p;
      const char* after_key = sample_json_skip(p, end);
      if (after_key == NULL || *key != '"') return 0;
      size_t key_len = (size_t)(after_key - key) - 2;
      p = sample_json_ws(after_key, end);
      if (p >= end || *p != ':') return 0;
      p = sample_json_ws(p + 1, end);
      if (strlen(path[d]) == key_len && strncmp(key + 1, path[d], key_len) == 0) {
        found = 1;
        break;
      }
      p = sample_json_skip(p, end);
      if (p == NULL) return 0;
      p = sample_json_ws(p, end);
      if (p < end && *p == ',') p = sample_json_ws(p + 1, end);
    }
    if (!found) return 0;
  }
  const char* value_end = sample_json_skip(p, end);
  if (value_end == NULL) return 0;
  *start = p;
  *len = (size_t)(value_end - p);
  return 1;
}

/* Read the model's config JSON into a malloc'd NUL-terminated string (caller frees). */
static inline TRITONSERVER_Error* sample_model_config(TRITONBACKEND_Model* model, char** json,
                                                      size_t* len) {
  TRITONSERVER_Message* msg = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelConfig(model, 1, &msg));
  const char* base = NULL;
  size_t size = 0;
  TRITONSERVER_Error* err = TRITONSERVER_MessageSerializeToJson(msg, &base, &size);
  if (err == NULL) {
    *json = (char*)malloc(size + 1);
    memcpy(*json, base, size);
    (*json)[size] = 0;
    *len = size;
  }
  TRITONSERVER_MessageDelete(msg);
  return err;
}

/* parameters.<key>.string_value as an integer; `fallback` when absent. Error if not an integer. */
static inline TRITONSERVER_Error* sample_int_parameter(const char* json, size_t len,
                                                       const char* key, long long fallback,
                                                       long long* value) {
  const char* path[3] = {"parameters", key, "string_value"};
  const char* start = NULL;
  size_t n = 0;
  *value = fallback;
  if (!sample_json_lookup(json, len, path, 3, &start, &n)) return NULL;
  if (n < 2 || start[0] != '"') {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "parameter is not a string");
  }
  char buf[32];
  size_t digits = n - 2;
  if (digits == 0 || digits >= sizeof buf) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "parameter is not an integer");
  }
  memcpy(buf, start + 1, digits);
  buf[digits] = 0;
  char* endp = NULL;
  long long v = strtoll(buf, &endp, 10);
  if (*endp != 0 || v < 0) {
    char msg[128];
    snprintf(msg, sizeof msg, "parameter '%s' must be a non-negative integer, got '%s'", key, buf);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  *value = v;
  return NULL;
}

/* A top-level integer field such as max_batch_size (0 when absent). */
static inline long long sample_int_field(const char* json, size_t len, const char* key) {
  const char* path[1] = {key};
  const char* start = NULL;
  size_t n = 0;
  if (!sample_json_lookup(json, len, path, 1, &start, &n)) return 0;
  return strtoll(start, NULL, 10);
}

/* ---- responses ------------------------------------------------------------------------------ */

/* Send `err` as the FINAL response of `request` and delete it. */
static inline void sample_respond_error(TRITONBACKEND_Request* request, TRITONSERVER_Error* err) {
  TRITONBACKEND_Response* response = NULL;
  TRITONSERVER_Error* e = TRITONBACKEND_ResponseNew(&response, request);
  if (e == NULL) {
    e = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err);
  }
  if (e != NULL) {
    SAMPLE_LOG(TRITONSERVER_LOG_ERROR, "failed to send error response: %s",
               TRITONSERVER_ErrorMessage(e));
    TRITONSERVER_ErrorDelete(e);
  }
  TRITONSERVER_ErrorDelete(err);
}

/* Fail unless the host offers backend API 1.19 or newer (what these samples are written for). */
static inline TRITONSERVER_Error* sample_check_api_version(void) {
  uint32_t major = 0, minor = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "triton backend API version does not support this backend");
  }
  return NULL;
}

/* Copy an input's (possibly multi-buffer) contents into `dst` (at least byte_size bytes). */
static inline TRITONSERVER_Error* sample_read_input(TRITONBACKEND_Input* input, void* dst,
                                                    uint64_t byte_size, uint32_t buffer_count) {
  uint64_t offset = 0;
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const void* buf = NULL;
    uint64_t size = 0;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &buf, &size, &mt, &mt_id));
    if (mt == TRITONSERVER_MEMORY_GPU) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "GPU input buffers unsupported");
    }
    if (offset + size > byte_size) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "input buffers exceed byte size");
    }
    memcpy((char*)dst + offset, buf, (size_t)size);
    offset += size;
  }
  return NULL;
}

/* An input tensor copied out of the request: shape (borrowed from the request), byte size, data. */
typedef struct {
  const int64_t* shape;
  uint32_t dims;
  uint64_t byte_size;
  void* data; /* malloc'd copy; free() it */
} SampleTensor;

/* Read input `name` of `request`, which must be of `datatype` (fixed-size) with exactly the bytes
 * its shape needs, into a malloc'd copy. INVALID_ARG names `backend` and the input otherwise. */
static inline TRITONSERVER_Error* sample_read_tensor(TRITONBACKEND_Request* request, const char* name,
                                                     TRITONSERVER_DataType datatype,
                                                     const char* backend, SampleTensor* t) {
  TRITONBACKEND_Input* input = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, name, &input));
  TRITONSERVER_DataType got;
  uint32_t buffer_count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, NULL, &got, &t->shape, &t->dims,
                                                       &t->byte_size, &buffer_count));
  char msg[256];
  if (got != datatype) {
    snprintf(msg, sizeof msg, "%s expects %s to be %s, got %s", backend, name,
             TRITONSERVER_DataTypeString(datatype), TRITONSERVER_DataTypeString(got));
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < t->dims; ++d) elements *= (uint64_t)t->shape[d];
  if (elements * TRITONSERVER_DataTypeByteSize(datatype) != t->byte_size) {
    snprintf(msg, sizeof msg, "%s: %s has %llu bytes for %llu %s elements", backend, name,
             (unsigned long long)t->byte_size, (unsigned long long)elements,
             TRITONSERVER_DataTypeString(datatype));
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  t->data = malloc(t->byte_size == 0 ? 1 : (size_t)t->byte_size);
  if (t->data == NULL) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory");
  return sample_read_input(input, t->data, t->byte_size, buffer_count);
}

/* End one request of a per-request execute loop: send `err` (if not NULL; deleted) as its FINAL
 * error response, report its statistics (success iff err == NULL, compute from compute_start to
 * compute_end) and release it. Failures of the reporting calls are dropped. */
static inline void sample_finish_request(TRITONBACKEND_ModelInstance* instance,
                                         TRITONBACKEND_Request* request, TRITONSERVER_Error* err,
                                         uint64_t exec_start, uint64_t compute_start,
                                         uint64_t compute_end) {
  int ok = err == NULL;
  if (err != NULL) sample_respond_error(request, err);
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
      instance, request, ok, exec_start, compute_start, compute_end, sample_now_ns());
  if (e != NULL) TRITONSERVER_ErrorDelete(e);
  e = TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL);
  if (e != NULL) TRITONSERVER_ErrorDelete(e);
}

/* Answer one request (send its FINAL response); an error returned is sent as its response. */
typedef TRITONSERVER_Error* (*SampleRequestFn)(TRITONBACKEND_Request* request);

/* A TRITONBACKEND_ModelInstanceExecute body that answers each request on its own with `fn`, then
 * reports statistics and releases it (sample_finish_request), and reports the batch. */
static inline TRITONSERVER_Error* sample_execute_each(TRITONBACKEND_ModelInstance* instance,
                                                     TRITONBACKEND_Request** requests,
                                                     uint32_t request_count, SampleRequestFn fn) {
  uint64_t exec_start = sample_now_ns();
  for (uint32_t r = 0; r < request_count; ++r) {
    uint64_t compute_start = sample_now_ns();
    TRITONSERVER_Error* err = fn(requests[r]);
    sample_finish_request(instance, requests[r], err, exec_start, compute_start, sample_now_ns());
  }
  uint64_t exec_end = sample_now_ns();
  return TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, request_count, exec_start,
                                                          exec_start, exec_end, exec_end);
}

#endif /* WARDEN_SAMPLE_UTIL_H */
