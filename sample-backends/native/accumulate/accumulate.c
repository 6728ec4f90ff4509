/*
 * warden_accumulate — a sequence backend (C, against Warden's warden/tritonbackend.h) keeping a
 * running sum in Triton's implicit state (sequence_batching.state, spec §5.6 / §6):
 *   inputs  INPUT (TYPE_INT32) and INPUT_STATE (TYPE_INT32, the state's input_name, fed by the
 *           sequence batcher: the initial state on a sequence's START, then the last update);
 *   outputs OUTPUT = INPUT_STATE + INPUT, element-wise, and the next state OUTPUT_STATE (the
 *           state's output_name) with the same values, written through TRITONBACKEND_StateNew /
 *           TRITONBACKEND_StateBuffer / TRITONBACKEND_StateUpdate before the response is sent.
 * INPUT and INPUT_STATE must have the same element count. Each request is answered on its own,
 * so direct and oldest batches alike work.
 */
#include "common/sample_util.h"

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  (void)backend;
  return sample_check_api_version();
}

typedef struct {
  const int64_t* shape;
  uint32_t dims;
  uint64_t byte_size;
  int32_t* data; /* malloc'd copy */
} Tensor;

static TRITONSERVER_Error* read_int32(TRITONBACKEND_Request* request, const char* name, Tensor* t) {
  TRITONBACKEND_Input* input = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, name, &input));
  TRITONSERVER_DataType datatype;
  uint32_t buffer_count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, NULL, &datatype, &t->shape, &t->dims,
                                                       &t->byte_size, &buffer_count));
  if (datatype != TRITONSERVER_TYPE_INT32 || t->byte_size % sizeof(int32_t) != 0) {
    char msg[256];
    snprintf(msg, sizeof msg, "accumulate expects %s to be INT32", name);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  t->data = (int32_t*)malloc(t->byte_size == 0 ? 1 : (size_t)t->byte_size);
  if (t->data == NULL) return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "out of memory");
  return sample_read_input(input, t->data, t->byte_size, buffer_count);
}

/* Sum into a fresh state (committed) and a response (sent FINAL). */
static TRITONSERVER_Error* accumulate(TRITONBACKEND_Request* request, const Tensor* in,
                                      const Tensor* state_in) {
  if (in->byte_size != state_in->byte_size) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "accumulate: INPUT and INPUT_STATE must have the same element count");
  }
  size_t n = (size_t)(in->byte_size / sizeof(int32_t));

  TRITONBACKEND_State* state = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_StateNew(&state, request, "OUTPUT_STATE",
                                                TRITONSERVER_TYPE_INT32, state_in->shape,
                                                state_in->dims));
  void* buffer = NULL;
  TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
  int64_t mt_id = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_StateBuffer(state, &buffer, in->byte_size, &mt, &mt_id));
  int32_t* next = (int32_t*)buffer;
  for (size_t i = 0; i < n; ++i) next[i] = state_in->data[i] + in->data[i];
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_StateUpdate(state));

  TRITONBACKEND_Response* response = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  TRITONBACKEND_Output* output = NULL;
  TRITONSERVER_Error* err = TRITONBACKEND_ResponseOutput(response, &output, "OUTPUT",
                                                         TRITONSERVER_TYPE_INT32, in->shape, in->dims);
  if (err == NULL) err = TRITONBACKEND_OutputBuffer(output, &buffer, in->byte_size, &mt, &mt_id);
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  memcpy(buffer, next, (size_t)in->byte_size);
  return TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, NULL);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  uint64_t exec_start = sample_now_ns();
  for (uint32_t r = 0; r < request_count; ++r) {
    Tensor in = {0}, state_in = {0};
    uint64_t compute_start = sample_now_ns();
    TRITONSERVER_Error* err = read_int32(requests[r], "INPUT", &in);
    if (err == NULL) err = read_int32(requests[r], "INPUT_STATE", &state_in);
    if (err == NULL) err = accumulate(requests[r], &in, &state_in);
    uint64_t compute_end = sample_now_ns();
    free(in.data);
    free(state_in.data);
    int ok = err == NULL;
    if (err != NULL) sample_respond_error(requests[r], err);
    TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
        instance, requests[r], ok, exec_start, compute_start, compute_end, sample_now_ns());
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
    e = TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
  }
  uint64_t exec_end = sample_now_ns();
  return TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, request_count, exec_start,
                                                          exec_start, exec_end, exec_end);
}
