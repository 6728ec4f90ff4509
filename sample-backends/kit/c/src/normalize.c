// {{name}}: bytes to normalised floats, OUTPUT0[i] = (INPUT0[i] / 255 - mean) / std, the first
// step of most image and audio pipelines. `mean` and `std` come from the model configuration's
// parameters (defaults 0.5 and 0.25); the model refuses to load with a std of 0.
#include <stdlib.h>
#include <string.h>

#include "warden_guest.h"

#define ERR_INVALID WARDEN_BACKEND_TYPES_ERROR_CODE_INVALID_ARG
#define ERR_INTERNAL WARDEN_BACKEND_TYPES_ERROR_CODE_INTERNAL

struct exports_warden_backend_backend_model_t {
  float scale, bias;  // out = v * scale + bias
};

struct exports_warden_backend_backend_instance_t {
  const exports_warden_backend_backend_model_t *model;
};

// The float in parameters.<key>.string_value, or `dflt` when the parameter is absent.
static bool param(wg_json_t params, const char *key, float dflt, float *out) {
  char buf[64];
  wg_json_t v = wg_json_member(wg_json_member(params, key), "string_value");
  if (!v.p) {
    *out = dflt;
    return true;
  }
  if (!wg_json_string(v, buf, sizeof buf)) return false;
  char *end;
  *out = strtof(buf, &end);
  return end != buf && *end == 0;
}

bool exports_warden_backend_backend_static_model_create(exports_warden_backend_backend_model_context_t *ctx,
                                                          exports_warden_backend_backend_own_model_t *ret,
                                                          exports_warden_backend_backend_error_t *err) {
  wg_json_t config = {(const char *)ctx->config.ptr, (const char *)ctx->config.ptr + ctx->config.len};
  wg_json_t params = wg_json_member(config, "parameters");
  float mean, std;
  bool result = false;
  if (!param(params, "mean", 0.5f, &mean) || !param(params, "std", 0.25f, &std) || std == 0) {
    wg_set_error(err, ERR_INVALID, "model '%.*s': parameters mean and std must be numbers, std non-zero", (int)ctx->name.len, ctx->name.ptr);
    goto done;
  }
  exports_warden_backend_backend_model_t *m = calloc(1, sizeof *m);
  if (!m) {
    wg_set_error(err, ERR_INTERNAL, "out of memory");
    goto done;
  }
  m->scale = 1.0f / (255.0f * std);
  m->bias = -mean / std;
  *ret = exports_warden_backend_backend_model_new(m);
  result = true;
done:
  exports_warden_backend_backend_model_context_free(ctx);
  return result;
}

bool exports_warden_backend_backend_static_instance_create(exports_warden_backend_backend_borrow_model_t model,
                                                             exports_warden_backend_backend_instance_context_t *ctx,
                                                             exports_warden_backend_backend_own_instance_t *ret,
                                                             exports_warden_backend_backend_error_t *err) {
  exports_warden_backend_backend_instance_context_free(ctx);
  exports_warden_backend_backend_instance_t *inst = calloc(1, sizeof *inst);
  if (!inst) {
    wg_set_error(err, ERR_INTERNAL, "out of memory");
    return false;
  }
  inst->model = model;
  *ret = exports_warden_backend_backend_instance_new(inst);
  return true;
}

// One request: fills `resp`, or `err` and returns false.
static bool run(const exports_warden_backend_backend_model_t *m, const wg_request_t *req, wg_response_t *resp, wg_error_t *err) {
  const wg_tensor_t *in = wg_input(req, "INPUT0");
  if (!in || in->datatype != WARDEN_BACKEND_TYPES_DATA_TYPE_UINT8) {
    wg_set_error(err, ERR_INVALID, "the request needs a UINT8 input 'INPUT0'");
    return false;
  }
  memset(resp, 0, sizeof *resp);
  if (!wg_requested(req, "OUTPUT0")) return true;
  size_t n = in->data.len;
  resp->outputs.ptr = calloc(1, sizeof(wg_tensor_t));
  if (!resp->outputs.ptr ||
      !wg_tensor_init(&resp->outputs.ptr[0], "OUTPUT0", WARDEN_BACKEND_TYPES_DATA_TYPE_FP32, in->shape.ptr, in->shape.len, n * sizeof(float))) {
    free(resp->outputs.ptr);
    resp->outputs.ptr = NULL;
    wg_set_error(err, ERR_INTERNAL, "out of memory for the output");
    return false;
  }
  resp->outputs.len = 1;
  float *out = (float *)resp->outputs.ptr[0].data.ptr;
  for (size_t i = 0; i < n; i++) out[i] = (float)in->data.ptr[i] * m->scale + m->bias;
  return true;
}

void exports_warden_backend_backend_method_instance_execute(exports_warden_backend_backend_borrow_instance_t self,
                                                              exports_warden_backend_backend_list_request_t *requests,
                                                              exports_warden_backend_backend_list_result_response_error_t *ret) {
  ret->len = requests->len;
  ret->ptr = calloc(requests->len ? requests->len : 1, sizeof *ret->ptr);
  for (size_t i = 0; i < requests->len; i++) {
    exports_warden_backend_backend_result_response_error_t *r = &ret->ptr[i];
    r->is_err = !run(self->model, &requests->ptr[i], &r->val.ok, &r->val.err);
  }
  exports_warden_backend_backend_list_request_free(requests);
}

void exports_warden_backend_backend_model_destructor(exports_warden_backend_backend_model_t *rep) { free(rep); }
void exports_warden_backend_backend_instance_destructor(exports_warden_backend_backend_instance_t *rep) { free(rep); }
