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

/* Sum into a fresh state (committed) and a response (sent FINAL). */
static TRITONSERVER_Error* accumulate(TRITONBACKEND_Request* request, const SampleTensor* in,
                                      const SampleTensor* state_in) {
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
  const int32_t* x = (const int32_t*)in->data;
  const int32_t* s = (const int32_t*)state_in->data;
  for (size_t i = 0; i < n; ++i) next[i] = s[i] + x[i];
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

/* One request: OUTPUT and the next state from INPUT and INPUT_STATE. */
static TRITONSERVER_Error* accumulate_request(TRITONBACKEND_Request* request) {
  SampleTensor in = {0}, state_in = {0};
  TRITONSERVER_Error* err = sample_read_tensor(request, "INPUT", TRITONSERVER_TYPE_INT32, "accumulate", &in);
  if (err == NULL) err = sample_read_tensor(request, "INPUT_STATE", TRITONSERVER_TYPE_INT32, "accumulate", &state_in);
  if (err == NULL) err = accumulate(request, &in, &state_in);
  free(in.data);
  free(state_in.data);
  return err;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  return sample_execute_each(instance, requests, request_count, accumulate_request);
}
