/*
 * warden_repeat — a decoupled Triton backend (C, against Warden's warden/tritonbackend.h) with the
 * semantics of Triton's repeat example:
 *   IN    INT32  [-1]  values to send back, one response each
 *   DELAY UINT32 [-1]  ms to wait before sending the response for IN[i] (same length as IN)
 *   WAIT  UINT32 [1]   ms after execution starts at which the request is released (the responses
 *                      keep coming afterwards from the response factory)
 * Each response carries OUT INT32 [1] = IN[i] and IDX UINT32 [1] = i (requested outputs only);
 * after the last one the FINAL flag is sent alone (TRITONBACKEND_ResponseFactorySendFlags).
 * Responses are produced on a thread per request, after Execute returned; Execute only validates
 * inputs and starts the thread. Requires model_transaction_policy { decoupled: true }.
 * Served as model `repeat_native`.
 */
#include <pthread.h>

#include "common/sample_util.h"

typedef struct Job {
  TRITONBACKEND_ModelInstance* instance;
  TRITONBACKEND_Request* request;
  TRITONBACKEND_ResponseFactory* factory;
  int32_t* in;
  uint32_t* delay;
  uint32_t count;
  uint32_t wait_ms;
  int want_out, want_idx;
  uint64_t exec_start;
  pthread_t thread;
  int finished; /* guarded by InstanceState.mu */
  struct Job* next;
} Job;

typedef struct {
  pthread_mutex_t mu;
  Job* jobs; /* started, not yet joined */
} InstanceState;

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  (void)backend;
  return sample_check_api_version();
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  char* json = NULL;
  size_t len = 0;
  SAMPLE_RETURN_IF_ERROR(sample_model_config(model, &json, &len));
  const char* path[2] = {"model_transaction_policy", "decoupled"};
  const char* v = NULL;
  size_t n = 0;
  int decoupled = sample_json_lookup(json, len, path, 2, &v, &n) && n == 4 && strncmp(v, "true", 4) == 0;
  free(json);
  if (!decoupled) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "repeat backend only supports models with "
                                 "model_transaction_policy { decoupled: true }");
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  InstanceState* state = (InstanceState*)calloc(1, sizeof(InstanceState));
  pthread_mutex_init(&state->mu, NULL);
  return TRITONBACKEND_ModelInstanceSetState(instance, state);
}

/* Join every finished responder thread (all of them when `all`). */
static void reap(InstanceState* state, int all) {
  for (;;) {
    Job* done = NULL;
    pthread_mutex_lock(&state->mu);
    for (Job** p = &state->jobs; *p != NULL; p = &(*p)->next) {
      if (all || (*p)->finished) {
        done = *p;
        *p = done->next;
        break;
      }
    }
    pthread_mutex_unlock(&state->mu);
    if (done == NULL) return;
    pthread_join(done->thread, NULL);
    free(done);
  }
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* vstate = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  InstanceState* state = (InstanceState*)vstate;
  reap(state, 1); /* every response is sent before the instance goes away */
  pthread_mutex_destroy(&state->mu);
  free(state);
  return NULL;
}

static void release_request(Job* job) {
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
      job->instance, job->request, true, job->exec_start, job->exec_start, sample_now_ns(),
      sample_now_ns());
  if (e != NULL) TRITONSERVER_ErrorDelete(e);
  e = TRITONBACKEND_RequestRelease(job->request, TRITONSERVER_REQUEST_RELEASE_ALL);
  if (e != NULL) TRITONSERVER_ErrorDelete(e);
  job->request = NULL;
}

static TRITONSERVER_Error* send_one(Job* job, uint32_t i) {
  TRITONBACKEND_Response* response = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseNewFromFactory(&response, job->factory));
  int64_t shape[1] = {1};
  TRITONSERVER_Error* err = NULL;
  for (int k = 0; k < 2 && err == NULL; ++k) {
    if ((k == 0 && !job->want_out) || (k == 1 && !job->want_idx)) continue;
    TRITONBACKEND_Output* output = NULL;
    err = TRITONBACKEND_ResponseOutput(response, &output, k == 0 ? "OUT" : "IDX",
                                       k == 0 ? TRITONSERVER_TYPE_INT32 : TRITONSERVER_TYPE_UINT32,
                                       shape, 1);
    if (err != NULL) break;
    void* buffer = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_OutputBuffer(output, &buffer, 4, &mt, &mt_id);
    if (err != NULL) break;
    if (k == 0) {
      memcpy(buffer, &job->in[i], 4);
    } else {
      memcpy(buffer, &i, 4);
    }
  }
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  return TRITONBACKEND_ResponseSend(response, 0, NULL);
}

static void* responder(void* arg) {
  Job* job = (Job*)arg;
  uint64_t release_at = job->exec_start + (uint64_t)job->wait_ms * 1000000ull;
  TRITONSERVER_Error* err = NULL;
  for (uint32_t i = 0; i < job->count && err == NULL; ++i) {
    uint64_t send_at = sample_now_ns() + (uint64_t)job->delay[i] * 1000000ull;
    if (job->request != NULL && release_at <= send_at) {
      uint64_t now = sample_now_ns();
      if (release_at > now) sample_sleep_ms((release_at - now) / 1000000ull);
      release_request(job);
    }
    uint64_t now = sample_now_ns();
    if (send_at > now) sample_sleep_ms((send_at - now) / 1000000ull);
    err = send_one(job, i);
  }
  if (err != NULL) {
    /* the error travels as the final response */
    TRITONBACKEND_Response* response = NULL;
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseNewFromFactory(&response, job->factory);
    if (e == NULL) e = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, err);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
    TRITONSERVER_ErrorDelete(err);
  } else {
    TRITONSERVER_Error* e =
        TRITONBACKEND_ResponseFactorySendFlags(job->factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
  }
  if (job->request != NULL) {
    uint64_t now = sample_now_ns();
    if (release_at > now) sample_sleep_ms((release_at - now) / 1000000ull);
    release_request(job);
  }
  TRITONBACKEND_ResponseFactoryDelete(job->factory);
  free(job->in);
  free(job->delay);
  void* vstate = NULL;
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceState(job->instance, &vstate);
  if (e != NULL) TRITONSERVER_ErrorDelete(e);
  InstanceState* state = (InstanceState*)vstate;
  pthread_mutex_lock(&state->mu);
  job->finished = 1;
  pthread_mutex_unlock(&state->mu);
  return NULL;
}

/* Read a whole input of `datatype` (4-byte elements) into a malloc'd array. */
static TRITONSERVER_Error* read_u32s(TRITONBACKEND_Request* request, const char* name,
                                     TRITONSERVER_DataType datatype, void** out, uint32_t* count) {
  TRITONBACKEND_Input* input = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, name, &input));
  TRITONSERVER_DataType dt;
  const int64_t* shape = NULL;
  uint32_t dims = 0, buffer_count = 0;
  uint64_t byte_size = 0;
  SAMPLE_RETURN_IF_ERROR(
      TRITONBACKEND_InputProperties(input, NULL, &dt, &shape, &dims, &byte_size, &buffer_count));
  char msg[256];
  if (dt != datatype) {
    snprintf(msg, sizeof msg, "repeat expects input '%s' to be %s, got %s", name,
             TRITONSERVER_DataTypeString(datatype), TRITONSERVER_DataTypeString(dt));
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < dims; ++d) elements *= (uint64_t)shape[d];
  if (elements * 4 != byte_size) {
    snprintf(msg, sizeof msg, "repeat: input '%s' has %llu bytes for %llu elements", name,
             (unsigned long long)byte_size, (unsigned long long)elements);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  *out = malloc(byte_size == 0 ? 1 : (size_t)byte_size);
  *count = (uint32_t)elements;
  TRITONSERVER_Error* err = sample_read_input(input, *out, byte_size, buffer_count);
  if (err != NULL) {
    free(*out);
    *out = NULL;
  }
  return err;
}

static TRITONSERVER_Error* start(TRITONBACKEND_ModelInstance* instance, InstanceState* state,
                                 TRITONBACKEND_Request* request, uint64_t exec_start) {
  Job* job = (Job*)calloc(1, sizeof(Job));
  job->instance = instance;
  job->request = request;
  job->exec_start = exec_start;
  uint32_t delay_count = 0, wait_count = 0;
  uint32_t* wait = NULL;
  TRITONSERVER_Error* err = read_u32s(request, "IN", TRITONSERVER_TYPE_INT32, (void**)&job->in, &job->count);
  if (err == NULL) err = read_u32s(request, "DELAY", TRITONSERVER_TYPE_UINT32, (void**)&job->delay, &delay_count);
  if (err == NULL) err = read_u32s(request, "WAIT", TRITONSERVER_TYPE_UINT32, (void**)&wait, &wait_count);
  if (err == NULL && delay_count != job->count) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                "repeat: DELAY must have as many elements as IN");
  }
  if (err == NULL && wait_count != 1) {
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "repeat: WAIT must have one element");
  }
  if (err == NULL) {
    job->wait_ms = wait[0];
    uint32_t outputs = 0;
    err = TRITONBACKEND_RequestOutputCount(request, &outputs);
    for (uint32_t o = 0; err == NULL && o < outputs; ++o) {
      const char* name = NULL;
      err = TRITONBACKEND_RequestOutputName(request, o, &name);
      if (err == NULL && strcmp(name, "OUT") == 0) job->want_out = 1;
      if (err == NULL && strcmp(name, "IDX") == 0) job->want_idx = 1;
    }
  }
  if (err == NULL) err = TRITONBACKEND_ResponseFactoryNew(&job->factory, request);
  free(wait);
  if (err == NULL) {
    pthread_mutex_lock(&state->mu);
    int rc = pthread_create(&job->thread, NULL, responder, job);
    if (rc == 0) {
      job->next = state->jobs;
      state->jobs = job;
    }
    pthread_mutex_unlock(&state->mu);
    if (rc == 0) return NULL;
    err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "repeat: cannot start a thread");
    TRITONBACKEND_ResponseFactoryDelete(job->factory);
  }
  free(job->in);
  free(job->delay);
  free(job);
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  uint64_t exec_start = sample_now_ns();
  void* vstate = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  InstanceState* state = (InstanceState*)vstate;
  reap(state, 0);
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONSERVER_Error* err = start(instance, state, requests[r], exec_start);
    if (err != NULL) {
      sample_respond_error(requests[r], err);
      TRITONSERVER_Error* e = TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL);
      if (e != NULL) TRITONSERVER_ErrorDelete(e);
    }
  }
  return NULL;
}
