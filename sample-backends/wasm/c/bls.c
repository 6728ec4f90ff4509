// A sandboxed backend that calls other models (Triton's BLS,
// `warden:backend/inference`, wit/inference.wit). The model it calls is the
// config parameter `callee` (default `simple`); the config must grant it
// (`bls_model:<name>`), or every call fails as for a missing model.
//
// Not decoupled: each request's inputs go to the callee as they are (`simple`:
// INPUT0, INPUT1 INT32), and its answer is post-processed: OUTPUT0 = callee
// OUTPUT0 + OUTPUT1 (= 2 * INPUT0), OUTPUT1 = callee OUTPUT0 - OUTPUT1 (= 2 *
// INPUT1). The request parameter `calls` (default 1) makes that many calls at
// once (all `start`ed before the first `next`) and answers from the last.
// Decoupled: each request's inputs go to a decoupled callee (e.g.
// `repeat_native`), and every response it streams is sent on as this model's
// own response, then the final flag. Errors of a call become the request's
// error, with the callee's code and message. The request parameter `callee`
// names another callee for this request (what the attack tests use).
#include <stdlib.h>
#include <string.h>

#include "warden_guest.h"

#define MAX_NAME 256

struct exports_warden_backend_backend_model_t {
  char callee[MAX_NAME];
  bool decoupled;
};
struct exports_warden_backend_backend_instance_t {
  const exports_warden_backend_backend_model_t *model;
};

bool exports_warden_backend_backend_static_model_create(
    exports_warden_backend_backend_model_context_t *ctx,
    exports_warden_backend_backend_own_model_t *ret,
    exports_warden_backend_backend_error_t *err) {
  exports_warden_backend_backend_model_t *m = calloc(1, sizeof *m);
  wg_json_t config = {(const char *)ctx->config.ptr,
                      (const char *)ctx->config.ptr + ctx->config.len};
  wg_json_t callee = wg_json_member(
      wg_json_member(wg_json_member(config, "parameters"), "callee"),
      "string_value");
  if (!callee.p)
    strcpy(m->callee, "simple");
  else if (!wg_json_string(callee, m->callee, sizeof m->callee)) {
    exports_warden_backend_backend_model_context_free(ctx);
    free(m);
    wg_set_error(err, WARDEN_BACKEND_TYPES_ERROR_CODE_INVALID_ARG,
                 "parameter 'callee' must be a model name");
    return false;
  }
  wg_json_t policy = wg_json_member(config, "model_transaction_policy");
  wg_json_t decoupled = wg_json_member(policy, "decoupled");
  m->decoupled = decoupled.p && decoupled.end - decoupled.p >= 4 &&
                 memcmp(decoupled.p, "true", 4) == 0;
  exports_warden_backend_backend_model_context_free(ctx);
  *ret = exports_warden_backend_backend_model_new(m);
  return true;
}

bool exports_warden_backend_backend_static_instance_create(
    exports_warden_backend_backend_borrow_model_t model,
    exports_warden_backend_backend_instance_context_t *ctx,
    exports_warden_backend_backend_own_instance_t *ret,
    exports_warden_backend_backend_error_t *err) {
  (void)err;
  exports_warden_backend_backend_instance_context_free(ctx);
  exports_warden_backend_backend_instance_t *inst = calloc(1, sizeof *inst);
  inst->model = (const exports_warden_backend_backend_model_t *)model;
  *ret = exports_warden_backend_backend_instance_new(inst);
  return true;
}

// The request parameter `key`, or NULL.
static const warden_backend_types_parameter_t *param(const wg_request_t *req,
                                                     const char *key) {
  size_t n = strlen(key);
  for (size_t i = 0; i < req->parameters.len; i++) {
    const warden_backend_types_parameter_t *p = &req->parameters.ptr[i];
    if (p->key.len == n && memcmp(p->key.ptr, key, n) == 0)
      return p;
  }
  return NULL;
}

// The model `req` calls: its parameter `callee`, else the configuration's.
static sandboxed_backend_string_t
callee_of(const exports_warden_backend_backend_model_t *m,
          const wg_request_t *req) {
  const warden_backend_types_parameter_t *c = param(req, "callee");
  if (c && c->value.tag == WARDEN_BACKEND_TYPES_PARAMETER_VALUE_STRING)
    return c->value.val.string;
  return (sandboxed_backend_string_t){(uint8_t *)m->callee, strlen(m->callee)};
}

// The call of `req` on `callee`: its inputs as they are, every output, no
// parameters.
static warden_backend_inference_inference_request_t
call_of(const wg_request_t *req, sandboxed_backend_string_t callee) {
  warden_backend_inference_inference_request_t call = {0};
  call.model_name = callee;
  call.model_version = -1;
  call.inputs.ptr = req->inputs.ptr;
  call.inputs.len = req->inputs.len;
  return call;
}

static const wg_tensor_t *output(const wg_response_t *r, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < r->outputs.len; i++) {
    if (r->outputs.ptr[i].name.len == n &&
        memcmp(r->outputs.ptr[i].name.ptr, name, n) == 0)
      return &r->outputs.ptr[i];
  }
  return NULL;
}

// `simple`'s answer post-processed into this model's (see the header).
static void
post_process(const wg_response_t *in,
             exports_warden_backend_backend_result_response_error_t *r) {
  const wg_tensor_t *a = output(in, "OUTPUT0");
  const wg_tensor_t *b = output(in, "OUTPUT1");
  if (!a || !b || a->datatype != WARDEN_BACKEND_TYPES_DATA_TYPE_INT32 ||
      b->datatype != a->datatype || a->data.len != b->data.len) {
    r->is_err = true;
    wg_set_error(
        &r->val.err, WARDEN_BACKEND_TYPES_ERROR_CODE_INTERNAL,
        "the callee answered without INT32 OUTPUT0 and OUTPUT1 of one size");
    return;
  }
  r->val.ok.outputs.ptr = calloc(2, sizeof(wg_tensor_t));
  r->val.ok.outputs.len = 2;
  wg_tensor_t *sum = &r->val.ok.outputs.ptr[0];
  wg_tensor_t *diff = &r->val.ok.outputs.ptr[1];
  wg_tensor_init(sum, "OUTPUT0", a->datatype, a->shape.ptr, a->shape.len,
                 a->data.len);
  wg_tensor_init(diff, "OUTPUT1", a->datatype, a->shape.ptr, a->shape.len,
                 a->data.len);
  size_t n = a->data.len / 4;
  for (size_t i = 0; i < n; i++) {
    int32_t x, y;
    memcpy(&x, a->data.ptr + 4 * i, 4);
    memcpy(&y, b->data.ptr + 4 * i, 4);
    int32_t s = (int32_t)((uint32_t)x + (uint32_t)y),
            d = (int32_t)((uint32_t)x - (uint32_t)y);
    memcpy(sum->data.ptr + 4 * i, &s, 4);
    memcpy(diff->data.ptr + 4 * i, &d, 4);
  }
}

static void fail_with(exports_warden_backend_backend_result_response_error_t *r,
                      warden_backend_types_error_t *e) {
  r->is_err = true;
  r->val.err = *e; // the message moves to the result (freed by the bindings
                   // after return)
}

// One non-decoupled request: `calls` calls to the callee, answered from the
// last.
static void answer(const exports_warden_backend_backend_model_t *m,
                   const wg_request_t *req,
                   exports_warden_backend_backend_result_response_error_t *r) {
  sandboxed_backend_string_t callee = callee_of(m, req);
  const warden_backend_types_parameter_t *k = param(req, "calls");
  int64_t calls = k && k->value.tag == WARDEN_BACKEND_TYPES_PARAMETER_VALUE_INT
                      ? k->value.val.int_
                      : 1;
  warden_backend_inference_inference_request_t call = call_of(req, callee);
  warden_backend_types_error_t e = {0};
  wg_response_t resp;
  if (calls <= 1) {
    if (!warden_backend_inference_infer(&call, &resp, &e))
      return fail_with(r, &e);
    post_process(&resp, r);
    warden_backend_types_response_free(&resp);
    return;
  }
  warden_backend_inference_call_handle_t *handles =
      calloc((size_t)calls, sizeof *handles);
  int64_t started = 0;
  bool failed = false;
  for (; started < calls; started++) {
    if (!warden_backend_inference_start(&call, &handles[started], &e)) {
      failed = true;
      break;
    }
  }
  if (failed) {
    for (int64_t i = 0; i < started; i++)
      warden_backend_inference_cancel(handles[i]);
    free(handles);
    return fail_with(r, &e);
  }
  bool have = false;
  for (int64_t i = 0; i < calls; i++) {
    warden_backend_inference_option_response_t next;
    while (warden_backend_inference_next(handles[i], &next, &e)) {
      if (!next.is_some)
        break;
      if (have)
        warden_backend_types_response_free(&resp);
      resp = next.val;
      have = true;
    }
    if (e.message.ptr && !failed) {
      failed = true;
      fail_with(r, &e);
    } else if (e.message.ptr) {
      warden_backend_types_error_free(&e);
    }
    e = (warden_backend_types_error_t){0};
  }
  free(handles);
  if (!failed && have) {
    post_process(&resp, r);
  } else if (!failed) {
    r->is_err = true;
    wg_set_error(&r->val.err, WARDEN_BACKEND_TYPES_ERROR_CODE_INTERNAL,
                 "the calls ended without a response");
  }
  if (have)
    warden_backend_types_response_free(&resp);
}

// One decoupled request: every response of the callee, sent on.
static void stream(const exports_warden_backend_backend_model_t *m,
                   const wg_request_t *req) {
  sandboxed_backend_string_t callee = callee_of(m, req);
  warden_backend_inference_inference_request_t call = call_of(req, callee);
  warden_backend_types_error_t e = {0}, ignored;
  warden_backend_inference_call_handle_t h;
  warden_backend_host_result_response_error_t out;
  if (!warden_backend_inference_start(&call, &h, &e)) {
    out.is_err = true;
    out.val.err = e;
    warden_backend_host_send_response(req->handle, &out, true, &ignored);
    warden_backend_types_error_free(&e);
    return;
  }
  for (;;) {
    warden_backend_inference_option_response_t next;
    if (!warden_backend_inference_next(h, &next, &e)) {
      out.is_err = true;
      out.val.err = e;
      warden_backend_host_send_response(req->handle, &out, true, &ignored);
      warden_backend_types_error_free(&e);
      return;
    }
    if (!next.is_some)
      break;
    out.is_err = false;
    out.val.ok = next.val;
    warden_backend_host_send_response(req->handle, &out, false, &ignored);
    warden_backend_types_response_free(&next.val);
  }
  warden_backend_host_send_final(req->handle, &ignored);
}

void exports_warden_backend_backend_method_instance_execute(
    exports_warden_backend_backend_borrow_instance_t self,
    exports_warden_backend_backend_list_request_t *requests,
    exports_warden_backend_backend_list_result_response_error_t *ret) {
  const exports_warden_backend_backend_model_t *m =
      ((exports_warden_backend_backend_instance_t *)self)->model;
  if (m->decoupled) {
    for (size_t i = 0; i < requests->len; i++)
      stream(m, &requests->ptr[i]);
    ret->len = 0;
    ret->ptr = NULL;
  } else {
    ret->len = requests->len;
    ret->ptr = calloc(requests->len ? requests->len : 1, sizeof *ret->ptr);
    for (size_t i = 0; i < requests->len; i++)
      answer(m, &requests->ptr[i], &ret->ptr[i]);
  }
  exports_warden_backend_backend_list_request_free(requests);
}

void exports_warden_backend_backend_model_destructor(
    exports_warden_backend_backend_model_t *rep) {
  free(rep);
}
void exports_warden_backend_backend_instance_destructor(
    exports_warden_backend_backend_instance_t *rep) {
  free(rep);
}
