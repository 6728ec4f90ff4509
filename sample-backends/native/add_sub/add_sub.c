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

static TRITONSERVER_Error* compute(TRITONBACKEND_Request* request, const SampleTensor* a,
                                   const SampleTensor* b) {
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
    const float* x = (const float*)a->data;
    const float* y = (const float*)b->data;
    for (size_t i = 0; i < n; ++i) out[i] = sum ? x[i] + y[i] : x[i] - y[i];
  }
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  return TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, NULL);
}

/* One request: OUTPUT0 / OUTPUT1 from INPUT0 and INPUT1. */
static TRITONSERVER_Error* add_sub_request(TRITONBACKEND_Request* request) {
  SampleTensor a = {0}, b = {0};
  TRITONSERVER_Error* err = sample_read_tensor(request, "INPUT0", TRITONSERVER_TYPE_FP32, "add_sub", &a);
  if (err == NULL) err = sample_read_tensor(request, "INPUT1", TRITONSERVER_TYPE_FP32, "add_sub", &b);
  if (err == NULL) err = compute(request, &a, &b);
  free(a.data);
  free(b.data);
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  return sample_execute_each(instance, requests, request_count, add_sub_request);
}
