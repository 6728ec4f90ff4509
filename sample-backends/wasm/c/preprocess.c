// preprocess: image preprocessing as a sandboxed backend, in C with wasm SIMD.
//
// IMAGE: UINT8, HWC (dims [-1, -1, 3], batch dimension first if max_batch_size > 0)
//   -> OUTPUT: FP32, CHW, dims [3, OUT_H, OUT_W] from the model configuration:
//      bilinear resize (half-pixel centres, like OpenCV INTER_LINEAR / PyTorch
//      align_corners=False), then per channel out = (v / 255 - mean[c]) / std[c].
// mean / std come from config parameters "mean" and "std" ("0.485,0.456,0.406" style), default
// ImageNet's. Served as model `preprocess_wasm`.
//
// The resize is separable: each needed source row is first resized horizontally into a float
// row per channel (cached: neighbouring output rows share source rows), then every output row is
// a vertical blend of two such rows, normalised and stored — 4 pixels per f32x4 operation.
#include <stdlib.h>
#include <string.h>
#include <wasm_simd128.h>

#include "warden_guest.h"

#define ERR_INVALID WARDEN_BACKEND_TYPES_ERROR_CODE_INVALID_ARG
#define ERR_INTERNAL WARDEN_BACKEND_TYPES_ERROR_CODE_INTERNAL

struct exports_warden_backend_backend_model_t {
  int64_t out_h, out_w;
  float scale[3], bias[3];  // out = v * scale + bias
  bool batched;
};

struct exports_warden_backend_backend_instance_t {
  const exports_warden_backend_backend_model_t *model;
};

static bool parse_triple(wg_json_t params, const char *key, float out[3], const float dflt[3]) {
  char buf[128];
  wg_json_t v = wg_json_member(wg_json_member(params, key), "string_value");
  if (!v.p) {
    memcpy(out, dflt, 3 * sizeof(float));
    return true;
  }
  if (!wg_json_string(v, buf, sizeof buf)) return false;
  char *p = buf;
  for (int i = 0; i < 3; i++) {
    char *end;
    out[i] = strtof(p, &end);
    if (end == p) return false;
    p = end;
    if (i < 2) {
      if (*p != ',') return false;
      p++;
    }
  }
  return *p == 0;
}

bool exports_warden_backend_backend_static_model_create(exports_warden_backend_backend_model_context_t *ctx,
                                                          exports_warden_backend_backend_own_model_t *ret,
                                                          exports_warden_backend_backend_error_t *err) {
  wg_json_t config = {(const char *)ctx->config.ptr, (const char *)ctx->config.ptr + ctx->config.len};
  wg_json_t dims = wg_json_member(wg_json_index(wg_json_member(config, "output"), 0), "dims");
  bool ok1, ok2, ok3, okb;
  double c = wg_json_number(wg_json_index(dims, 0), &ok1);
  double h = wg_json_number(wg_json_index(dims, 1), &ok2);
  double w = wg_json_number(wg_json_index(dims, 2), &ok3);
  double mbs = wg_json_number(wg_json_member(config, "max_batch_size"), &okb);
  bool result = false;
  if (!ok1 || !ok2 || !ok3 || wg_json_length(dims) != 3 || c != 3 || h < 1 || w < 1 || h > 16384 || w > 16384) {
    wg_set_error(err, ERR_INVALID, "preprocess model '%.*s': the output must have fixed dims [3, height, width]", (int)ctx->name.len, ctx->name.ptr);
    goto done;
  }
  static const float mean0[3] = {0.485f, 0.456f, 0.406f}, std0[3] = {0.229f, 0.224f, 0.225f};
  float mean[3], std[3];
  wg_json_t params = wg_json_member(config, "parameters");
  if (!parse_triple(params, "mean", mean, mean0) || !parse_triple(params, "std", std, std0) || std[0] == 0 || std[1] == 0 || std[2] == 0) {
    wg_set_error(err, ERR_INVALID, "preprocess model: parameters mean and std must be three comma-separated numbers, std non-zero");
    goto done;
  }
  exports_warden_backend_backend_model_t *m = calloc(1, sizeof *m);
  if (!m) {
    wg_set_error(err, ERR_INTERNAL, "out of memory");
    goto done;
  }
  m->out_h = (int64_t)h;
  m->out_w = (int64_t)w;
  m->batched = okb && mbs > 0;
  for (int i = 0; i < 3; i++) {
    m->scale[i] = 1.0f / (255.0f * std[i]);
    m->bias[i] = -mean[i] / std[i];
  }
  wg_log(WARDEN_BACKEND_HOST_LOG_LEVEL_VERBOSE, "preprocess: output 3x%lldx%lld", (long long)m->out_h, (long long)m->out_w);
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

// Source coordinate mapping of one axis: out index -> (i0, i1, weight of i1).
typedef struct {
  int32_t *i0, *i1;
  float *w;
} axis_map_t;

static bool axis_map(axis_map_t *m, int64_t in, int64_t out) {
  m->i0 = malloc((size_t)out * sizeof(int32_t));
  m->i1 = malloc((size_t)out * sizeof(int32_t));
  m->w = malloc((size_t)out * sizeof(float));
  if (!m->i0 || !m->i1 || !m->w) return false;
  float scale = (float)in / (float)out;
  for (int64_t o = 0; o < out; o++) {
    float s = ((float)o + 0.5f) * scale - 0.5f;
    if (s < 0) s = 0;
    int32_t i0 = (int32_t)s;
    if (i0 > in - 1) i0 = (int32_t)(in - 1);
    int32_t i1 = i0 + 1 < in ? i0 + 1 : i0;
    m->i0[o] = i0;
    m->i1[o] = i1;
    m->w[o] = s - (float)i0;
  }
  return true;
}

static void axis_free(axis_map_t *m) {
  free(m->i0);
  free(m->i1);
  free(m->w);
}

// Horizontal pass of source row `y` (HWC bytes) into rows[c][x], c = 0..2.
static void hrow(const uint8_t *img, int64_t in_w, int64_t y, const axis_map_t *xs, int64_t out_w, float *rows[3]) {
  const uint8_t *row = img + (size_t)y * (size_t)in_w * 3;
  int64_t x = 0;
  for (; x + 4 <= out_w; x += 4) {
    v128_t w1 = wasm_v128_load(&xs->w[x]);
    v128_t w0 = wasm_f32x4_sub(wasm_f32x4_splat(1.0f), w1);
    for (int c = 0; c < 3; c++) {
      v128_t a = wasm_f32x4_make(row[xs->i0[x] * 3 + c], row[xs->i0[x + 1] * 3 + c], row[xs->i0[x + 2] * 3 + c], row[xs->i0[x + 3] * 3 + c]);
      v128_t b = wasm_f32x4_make(row[xs->i1[x] * 3 + c], row[xs->i1[x + 1] * 3 + c], row[xs->i1[x + 2] * 3 + c], row[xs->i1[x + 3] * 3 + c]);
      wasm_v128_store(&rows[c][x], wasm_f32x4_add(wasm_f32x4_mul(a, w0), wasm_f32x4_mul(b, w1)));
    }
  }
  for (; x < out_w; x++) {
    float w1 = xs->w[x], w0 = 1.0f - w1;
    for (int c = 0; c < 3; c++) rows[c][x] = row[xs->i0[x] * 3 + c] * w0 + row[xs->i1[x] * 3 + c] * w1;
  }
}

// Resizes + normalises one HWC image into CHW floats `out`.
static bool preprocess_image(const exports_warden_backend_backend_model_t *m, const uint8_t *img, int64_t in_h, int64_t in_w, float *out) {
  const int64_t oh = m->out_h, ow = m->out_w;
  axis_map_t xs = {0}, ys = {0};
  float *buf = malloc(2 * 3 * (size_t)ow * sizeof(float));
  bool ok = buf && axis_map(&xs, in_w, ow) && axis_map(&ys, in_h, oh);
  if (ok) {
    float *rows[2][3];
    int64_t cached[2] = {-1, -1};
    for (int s = 0; s < 2; s++)
      for (int c = 0; c < 3; c++) rows[s][c] = buf + ((size_t)s * 3 + (size_t)c) * (size_t)ow;
    for (int64_t y = 0; y < oh; y++) {
      int64_t need[2] = {ys.i0[y], ys.i1[y]};
      int slot[2];
      for (int k = 0; k < 2; k++) {
        if (cached[0] == need[k]) slot[k] = 0;
        else if (cached[1] == need[k]) slot[k] = 1;
        else {
          // evict the slot the other needed row does not use
          int s = (k == 1 && slot[0] == 0) ? 1 : (k == 1 ? 0 : (cached[1] == need[1] ? 0 : 1));
          hrow(img, in_w, need[k], &xs, ow, rows[s]);
          cached[s] = need[k];
          slot[k] = s;
        }
      }
      v128_t w1 = wasm_f32x4_splat(ys.w[y]);
      v128_t w0 = wasm_f32x4_splat(1.0f - ys.w[y]);
      for (int c = 0; c < 3; c++) {
        const float *a = rows[slot[0]][c], *b = rows[slot[1]][c];
        float *o = out + ((size_t)c * (size_t)oh + (size_t)y) * (size_t)ow;
        v128_t sc = wasm_f32x4_splat(m->scale[c]), bi = wasm_f32x4_splat(m->bias[c]);
        int64_t x = 0;
        for (; x + 4 <= ow; x += 4) {
          v128_t v = wasm_f32x4_add(wasm_f32x4_mul(wasm_v128_load(a + x), w0), wasm_f32x4_mul(wasm_v128_load(b + x), w1));
          wasm_v128_store(o + x, wasm_f32x4_add(wasm_f32x4_mul(v, sc), bi));
        }
        for (; x < ow; x++) o[x] = (a[x] * (1.0f - ys.w[y]) + b[x] * ys.w[y]) * m->scale[c] + m->bias[c];
      }
    }
  }
  axis_free(&xs);
  axis_free(&ys);
  free(buf);
  return ok;
}

static bool run(const exports_warden_backend_backend_model_t *m, const wg_request_t *req, wg_response_t *resp, wg_error_t *err) {
  const wg_tensor_t *in = wg_input(req, "IMAGE");
  if (!in) {
    wg_set_error(err, ERR_INVALID, "request is missing input 'IMAGE'");
    return false;
  }
  const size_t lead = m->batched ? 1 : 0;
  if (in->datatype != WARDEN_BACKEND_TYPES_DATA_TYPE_UINT8 || in->shape.len != 3 + lead || in->shape.ptr[2 + lead] != 3) {
    wg_set_error(err, ERR_INVALID, "input 'IMAGE' must be UINT8 with shape [%sheight, width, 3]", m->batched ? "batch, " : "");
    return false;
  }
  const int64_t n = m->batched ? in->shape.ptr[0] : 1, h = in->shape.ptr[lead], w = in->shape.ptr[lead + 1];
  if (h < 1 || w < 1) {
    wg_set_error(err, ERR_INVALID, "input 'IMAGE' is empty");
    return false;
  }
  memset(resp, 0, sizeof *resp);
  if (!wg_requested(req, "OUTPUT")) return true;
  int64_t shape[4] = {n, 3, m->out_h, m->out_w};
  const size_t plane = 3 * (size_t)m->out_h * (size_t)m->out_w;
  resp->outputs.ptr = calloc(1, sizeof(wg_tensor_t));
  if (!resp->outputs.ptr || !wg_tensor_init(&resp->outputs.ptr[0], "OUTPUT", WARDEN_BACKEND_TYPES_DATA_TYPE_FP32, m->batched ? shape : shape + 1, 3 + lead, (size_t)n * plane * sizeof(float))) {
    free(resp->outputs.ptr);
    resp->outputs.ptr = NULL;
    wg_set_error(err, ERR_INTERNAL, "out of memory for the output");
    return false;
  }
  resp->outputs.len = 1;
  for (int64_t b = 0; b < n; b++) {
    const uint8_t *img = in->data.ptr + (size_t)b * (size_t)h * (size_t)w * 3;
    if (!preprocess_image(m, img, h, w, (float *)resp->outputs.ptr[0].data.ptr + (size_t)b * plane)) {
      warden_backend_types_list_tensor_free(&resp->outputs);
      memset(resp, 0, sizeof *resp);
      wg_set_error(err, ERR_INTERNAL, "out of memory while resizing");
      return false;
    }
  }
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
