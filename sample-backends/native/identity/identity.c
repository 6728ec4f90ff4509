/*
 * warden_identity — a Triton backend (C, against Warden's warden/tritonbackend.h) that returns
 * every requested OUTPUT<k> as a copy of INPUT<k>: same datatype (all 14, BYTES included, copied
 * in their serialized form), same shape, same bytes.
 *
 * Config parameters: `execute_delay_ms` (string, integer >= 0): sleep that long once per execution
 * before computing. Request parameters: each `response_<name>` comes back as response parameter
 * `<name>` with its value and type (INT, BOOL, STRING, DOUBLE) — e.g. `response_sequence_id`, which
 * an ensemble step's response uses to set the sequence of the steps downstream (Triton's ensemble
 * scheduler reads it; an ensemble hands its request's parameters to every step). Batching: with max_batch_size > 0 the host may hand several requests to one
 * execution; the batch size reported is the sum of their first dimensions.
 * Served as model `identity_native` (INPUT0 -> OUTPUT0, TYPE_FP32, dims [-1]).
 *
 * Custom metric (as Triton's identity backend): counter `input_byte_size_counter{model,version}`,
 * the cumulative byte size of every input the model received, registered through
 * TRITONSERVER_MetricFamilyNew / TRITONSERVER_MetricNew.
 */
#include "common/sample_util.h"

typedef struct {
  long long execute_delay_ms;
  long long max_batch_size;
  TRITONSERVER_Metric* input_bytes; /* NULL if the host has no metrics */
} ModelState;

/* One metric family per backend library, created in Initialize, deleted in Finalize. */
static TRITONSERVER_MetricFamily* g_input_bytes_family = NULL;

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  SAMPLE_RETURN_IF_ERROR(sample_check_api_version());
  const char* name = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  TRITONSERVER_Message* config = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_BackendConfig(backend, &config));  // host-owned
  const char* json = NULL;
  size_t len = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONSERVER_MessageSerializeToJson(config, &json, &len));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "backend %s initialized, config %.*s", name, (int)len, json);
  TRITONSERVER_Error* err = TRITONSERVER_MetricFamilyNew(
      &g_input_bytes_family, TRITONSERVER_METRIC_KIND_COUNTER, "input_byte_size_counter",
      "Cumulative input byte size of all requests received by the model");
  if (err != NULL) { /* metrics are optional: serve without them */
    SAMPLE_LOG(TRITONSERVER_LOG_WARN, "no custom metrics: %s", TRITONSERVER_ErrorMessage(err));
    TRITONSERVER_ErrorDelete(err);
    g_input_bytes_family = NULL;
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  const char* name = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "backend %s finalized", name);
  if (g_input_bytes_family != NULL) {
    TRITONSERVER_Error* err = TRITONSERVER_MetricFamilyDelete(g_input_bytes_family);
    if (err != NULL) TRITONSERVER_ErrorDelete(err);
    g_input_bytes_family = NULL;
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_GetBackendAttribute(TRITONBACKEND_Backend* backend,
                                                      TRITONBACKEND_BackendAttribute* attributes) {
  (void)backend;
  return TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(attributes, true);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  char* json = NULL;
  size_t len = 0;
  SAMPLE_RETURN_IF_ERROR(sample_model_config(model, &json, &len));
  ModelState* state = (ModelState*)calloc(1, sizeof(ModelState));
  TRITONSERVER_Error* err = sample_int_parameter(json, len, "execute_delay_ms", 0,
                                                 &state->execute_delay_ms);
  state->max_batch_size = sample_int_field(json, len, "max_batch_size");
  free(json);
  if (err != NULL) {
    free(state);
    return err;
  }
  const char* name = NULL;
  uint64_t version = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelVersion(model, &version));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "model %s version %llu initialized", name, (unsigned long long)version);
  if (g_input_bytes_family != NULL) {
    char vtext[32];
    snprintf(vtext, sizeof vtext, "%llu", (unsigned long long)version);
    const TRITONSERVER_Parameter* labels[2] = {
        TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, name),
        TRITONSERVER_ParameterNew("version", TRITONSERVER_PARAMETER_STRING, vtext)};
    TRITONSERVER_Error* merr = TRITONSERVER_MetricNew(&state->input_bytes, g_input_bytes_family, labels, 2);
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter*)labels[0]); /* MetricNew copies labels */
    TRITONSERVER_ParameterDelete((TRITONSERVER_Parameter*)labels[1]);
    if (merr != NULL) {
      TRITONSERVER_ErrorDelete(merr);
      state->input_bytes = NULL;
    }
  }
  return TRITONBACKEND_ModelSetState(model, state);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  ModelState* ms = (ModelState*)state;
  if (ms != NULL && ms->input_bytes != NULL) {
    TRITONSERVER_Error* err = TRITONSERVER_MetricDelete(ms->input_bytes);
    if (err != NULL) TRITONSERVER_ErrorDelete(err);
  }
  free(state);
  const char* name = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "model %s finalized", name);
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  const char* name = NULL;
  TRITONSERVER_InstanceGroupKind kind;
  int32_t device = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceKind(instance, &kind));
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &device));
  TRITONSERVER_Message* policy = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceHostPolicy(instance, &policy));  // host-owned
  const char* policy_json = NULL;
  size_t policy_len = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONSERVER_MessageSerializeToJson(policy, &policy_json, &policy_len));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "instance %s (%s device %d, host policy %.*s) initialized", name,
             TRITONSERVER_InstanceGroupKindString(kind), (int)device, (int)policy_len, policy_json);
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  const char* name = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceName(instance, &name));
  SAMPLE_LOG(TRITONSERVER_LOG_VERBOSE, "instance %s finalized", name);
  return NULL;
}

/* Build and send the response for one request; returns the error to respond with (or NULL). */
/* Request parameters `response_<name>` as response parameters `<name>` (same type and value). */
static TRITONSERVER_Error* echo_response_parameters(TRITONBACKEND_Request* request,
                                                   TRITONBACKEND_Response* response) {
  static const char prefix[] = "response_";
  uint32_t count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestParameterCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* key = NULL;
    TRITONSERVER_ParameterType type;
    const void* v = NULL;
    SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestParameter(request, i, &key, &type, &v));
    if (strncmp(key, prefix, sizeof prefix - 1) != 0 || key[sizeof prefix - 1] == '\0') continue;
    const char* name = key + sizeof prefix - 1;
    switch (type) {
      case TRITONSERVER_PARAMETER_INT:
        SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseSetIntParameter(response, name, *(const int64_t*)v));
        break;
      case TRITONSERVER_PARAMETER_BOOL:
        SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseSetBoolParameter(response, name, *(const bool*)v));
        break;
      case TRITONSERVER_PARAMETER_DOUBLE:
        SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseSetDoubleParameter(response, name, *(const double*)v));
        break;
      case TRITONSERVER_PARAMETER_STRING:
        SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseSetStringParameter(response, name, (const char*)v));
        break;
      default:
        break;
    }
  }
  return NULL;
}

static TRITONSERVER_Error* respond(TRITONBACKEND_Request* request, long long max_batch_size,
                                   uint64_t* batch) {
  uint32_t output_count = 0;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &output_count));
  TRITONBACKEND_Response* response = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  TRITONSERVER_Error* err = NULL;
  for (uint32_t o = 0; o < output_count && err == NULL; ++o) {
    const char* output_name = NULL;
    err = TRITONBACKEND_RequestOutputName(request, o, &output_name);
    if (err != NULL) break;
    if (strncmp(output_name, "OUTPUT", 6) != 0) {
      char msg[256];
      snprintf(msg, sizeof msg, "identity output '%s' is not named OUTPUT<k>", output_name);
      err = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, msg);
      break;
    }
    char input_name[256];
    snprintf(input_name, sizeof input_name, "INPUT%s", output_name + 6);
    TRITONBACKEND_Input* input = NULL;
    err = TRITONBACKEND_RequestInput(request, input_name, &input);
    if (err != NULL) break;
    TRITONSERVER_DataType datatype;
    const int64_t* shape = NULL;
    uint32_t dims = 0, buffer_count = 0;
    uint64_t byte_size = 0;
    err = TRITONBACKEND_InputProperties(input, NULL, &datatype, &shape, &dims, &byte_size,
                                        &buffer_count);
    if (err != NULL) break;
    if (o == 0) *batch += (max_batch_size > 0 && dims > 0) ? (uint64_t)shape[0] : 1;
    TRITONBACKEND_Output* output = NULL;
    err = TRITONBACKEND_ResponseOutput(response, &output, output_name, datatype, shape, dims);
    if (err != NULL) break;
    void* buffer = NULL;
    TRITONSERVER_MemoryType mt = TRITONSERVER_MEMORY_CPU;
    int64_t mt_id = 0;
    err = TRITONBACKEND_OutputBuffer(output, &buffer, byte_size, &mt, &mt_id);
    if (err != NULL) break;
    err = sample_read_input(input, buffer, byte_size, buffer_count);
  }
  if (err == NULL) err = echo_response_parameters(request, response);
  if (err != NULL) {
    TRITONBACKEND_ResponseDelete(response);
    return err;
  }
  TRITONSERVER_Error* send_err =
      TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, NULL);
  if (send_err != NULL) {
    SAMPLE_LOG(TRITONSERVER_LOG_ERROR, "failed to send response: %s",
               TRITONSERVER_ErrorMessage(send_err));
    TRITONSERVER_ErrorDelete(send_err);
  }
  return NULL;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests,
                                                       const uint32_t request_count) {
  uint64_t exec_start = sample_now_ns();
  TRITONBACKEND_Model* model = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* vstate = NULL;
  SAMPLE_RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &vstate));
  const ModelState* state = (const ModelState*)vstate;
  if (state->execute_delay_ms > 0) sample_sleep_ms((uint64_t)state->execute_delay_ms);

  uint64_t compute_start = sample_now_ns();
  if (state->input_bytes != NULL) {
    double bytes = 0;
    for (uint32_t r = 0; r < request_count; ++r) {
      uint32_t inputs = 0;
      TRITONSERVER_Error* ce = TRITONBACKEND_RequestInputCount(requests[r], &inputs);
      if (ce != NULL) {
        TRITONSERVER_ErrorDelete(ce);
        continue;
      }
      for (uint32_t i = 0; i < inputs; ++i) {
        TRITONBACKEND_Input* input = NULL;
        uint64_t size = 0;
        TRITONSERVER_Error* e = TRITONBACKEND_RequestInputByIndex(requests[r], i, &input);
        if (e == NULL) e = TRITONBACKEND_InputProperties(input, NULL, NULL, NULL, NULL, &size, NULL);
        if (e != NULL) TRITONSERVER_ErrorDelete(e);
        else bytes += (double)size;
      }
    }
    TRITONSERVER_Error* e = TRITONSERVER_MetricIncrement(state->input_bytes, bytes);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
  }
  uint64_t batch = 0;
  char* ok = (char*)calloc(request_count == 0 ? 1 : request_count, 1);
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONSERVER_Error* err = respond(requests[r], state->max_batch_size, &batch);
    ok[r] = err == NULL;
    if (err != NULL) sample_respond_error(requests[r], err);
  }
  uint64_t compute_end = sample_now_ns();
  uint64_t exec_end = compute_end;
  for (uint32_t r = 0; r < request_count; ++r) {
    TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(
        instance, requests[r], ok[r] != 0, exec_start, compute_start, compute_end, exec_end);
    if (e != NULL) TRITONSERVER_ErrorDelete(e);
    e = TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL);
    if (e != NULL) {
      SAMPLE_LOG(TRITONSERVER_LOG_ERROR, "failed to release request: %s", TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  }
  free(ok);
  return TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, batch, exec_start, compute_start,
                                                          compute_end, exec_end);
}
