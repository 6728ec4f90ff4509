/*
 * warden_add_sub — a Triton backend (C, against Warden's warden/tritonbackend.h):
 * INPUT0, INPUT1 (TYPE_FP32, same shape) -> OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
 * Only requested outputs are produced. Mismatched datatypes, shapes or byte sizes get an
 * INVALID_ARG error response. Served as model `add_sub_native` (dims [-1], max_batch_size 0).
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
  float* data; /* malloc'd copy */
} Operand;

static TRITONSERVER_Error* read_operand(TRITONBACKEND_Request* request, const char* name,
                                        Operand* op) {
  TRITONBACKEND_Input* input = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, name, &input));
  TRITONSERVER_DataType datatype;
  uint32_t buffer_count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, NULL, &datatype, &op->shape, &op->dims,
                                                       &op->byte_size, &buffer_count));
  char msg[256];
  if (datatype != TRITONSERVER_TYPE_FP32) {
    snprintf(msg, sizeof msg, "add_sub expects %s to be FP32, got %s", name,
             TRITONSERVER_DataTypeString(datatype));
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < op->dims; ++d) elements *= (uint64_t)op->shape[d];
  if (elements * sizeof(float) != op->byte_size) {
    snprintf(msg, sizeof msg, "add_sub: %s has %llu bytes for %llu FP32 elements", name,
             (unsigned long long)op->byte_size, (unsigned long long)elements);
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
  }
  op->data = (float*)malloc(op->byte_size == 0 ? 1 : (size_t)op->byte_size);
  return sample_read_input(input, op->data, op->byte_size, buffer_count);
}

static TRITONSERVER_Error* compute(TRITONBACKEND_Request* request, const Operand* a,
                                   const Operand* b) {
  if (a->dims != b->dims || memcmp(a->shape, b->shape, a->dims * sizeof(int64_t)) != 0) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                 "add_sub: INPUT0 and INPUT1 must have the same shape");
  }
  uint32_t output_count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &output_count));
  TRITONBACKEND_Response* response = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  size_t n = (size_t)(a->byte_size / sizeof(float));
  TRITONSERVER_Error* err = NULL;
  for (uint32_t o = 0; o < output_count && err == NULL; ++o) {
    const char* name = NULL;
    err = TRITONBACKEND_RequestOutputName(request, o, &name);
    if (err != NULL) break;
    int sum = strcmp(name, "OUTPUT0") == 0;
    if (!sum && strcmp(name, "OUTPUT1") != 0) {
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "add_sub: unknown output");
      break;
    }
    TRITONBACKEND_Output* output = NULL;
    err = TRITONBACKEND_ResponseOutput(response, &output, name, TRITONSERVER_TYPE_FP32, a->shape,
                                       a->dims);
    if (err != NULL) break;
    void* buffer = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_OutputBuffer(output, &buffer, a->byte_size, &mt, &mt_id);
    if (err != NULL) break;
    float* out = (float*)buffer;
    for (size_t i = 0; i < n; ++i) out[i] = sum ? a->data[i] + b->data[i] : a->data[i] - b->data[i];
  }
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  return TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, NULL);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  uint64_t exec_start = sample_now_ns();
  for (uint32_t r = 0; r < request_count; ++r) {
    Operand a = {0}, b = {0};
    uint64_t compute_start = sample_now_ns();
    TRITONSERVER_Error* err = read_operand(requests[r], "INPUT0", &a);
    if (err == NULL) err = read_operand(requests[r], "INPUT1", &b);
    if (err == NULL) err = compute(requests[r], &a, &b);
    uint64_t compute_end = sample_now_ns();
    free(a.data);
    free(b.data);
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
