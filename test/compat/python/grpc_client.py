"""tritonclient.grpc against Warden's gRPC frontend (inference.GRPCInferenceService): every unary
RPC, ModelInfer with raw contents, errors with Triton's gRPC status codes, statistics, the
repository extension (load with config and file overrides as bytes), log and trace settings, and
ModelStreamInfer with ordinary and decoupled models (`triton_final_response`).

Run: grpc_client.py --url <http host:port> --grpc-url <grpc host:port> --repo <model_repository>
"""

import os
import queue
import threading
from functools import partial

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true

run = Run("grpc_client.py", __doc__, lambda p: p.add_argument("--grpc-url", required=True))
g = grpcclient.InferenceServerClient(url=run.args.grpc_url)


def simple_inputs(a, b, batch=1):
    i0 = grpcclient.InferInput("INPUT0", [batch, 16], "INT32")
    i0.set_data_from_numpy(a)
    i1 = grpcclient.InferInput("INPUT1", [batch, 16], "INT32")
    i1.set_data_from_numpy(b)
    return [i0, i1]


A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 3, dtype=np.int32)


def health():
    expect_eq(g.is_server_live(), True, "is_server_live")
    expect_eq(g.is_server_ready(), True, "is_server_ready")
    expect_eq(g.is_model_ready("simple"), True, "is_model_ready(simple)")
    expect_eq(g.is_model_ready("simple", "1"), True, "is_model_ready(simple, 1)")
    expect_eq(g.is_model_ready("simple", "7"), False, "is_model_ready(simple, 7)")
    expect_eq(g.is_model_ready("no_such_model"), False, "is_model_ready(no_such_model)")


def server_metadata():
    m = g.get_server_metadata(as_json=True)
    run.observe("server_metadata", m)
    expect_eq(m["name"], "triton", "name (tritonserver's default --id)")
    expect_true("model_repository" in m["extensions"], f"extensions {m['extensions']}")


def model_metadata():
    m = g.get_model_metadata("simple", as_json=True)
    run.observe("model_metadata:simple", m)
    expect_eq(m["inputs"][0], {"name": "INPUT0", "datatype": "INT32", "shape": ["-1", "16"]}, "INPUT0")
    expect_eq(m["versions"], ["1"], "versions")


def model_config():
    c = g.get_model_config("simple", as_json=True)["config"]
    run.observe("model_config:simple", c)
    expect_eq(c["name"], "simple", "name")
    expect_eq(c["max_batch_size"], 8, "max_batch_size")
    expect_eq(c["input"][0]["data_type"], "TYPE_INT32", "data_type")
    expect_eq(c["input"][0]["dims"], ["16"], "dims")
    # the protobuf message itself (not JSON): tritonclient hands back a ModelConfigResponse
    pb = g.get_model_config("simple")
    expect_eq(pb.config.input[1].name, "INPUT1", "protobuf input[1].name")


def infer_simple():
    r = g.infer("simple", simple_inputs(A, B), request_id="req-7")
    expect_array(r.as_numpy("OUTPUT0"), A + B, "OUTPUT0")
    expect_array(r.as_numpy("OUTPUT1"), A - B, "OUTPUT1")
    expect_eq(r.get_response().id, "req-7", "id echoed")
    expect_eq(r.get_response().model_version, "1", "model_version")


def infer_batch8_and_subset():
    a = np.arange(128, dtype=np.int32).reshape(8, 16)
    b = np.ones((8, 16), dtype=np.int32)
    r = g.infer("simple", simple_inputs(a, b, 8), outputs=[grpcclient.InferRequestedOutput("OUTPUT1")])
    expect_array(r.as_numpy("OUTPUT1"), a - b, "OUTPUT1")
    expect_eq(r.as_numpy("OUTPUT0"), None, "OUTPUT0 not requested")


def infer_string():
    a = np.array([[str(i).encode() for i in range(16)]], dtype=np.object_)
    b = np.array([[b"2"] * 16], dtype=np.object_)
    i0 = grpcclient.InferInput("INPUT0", [1, 16], "BYTES")
    i0.set_data_from_numpy(a)
    i1 = grpcclient.InferInput("INPUT1", [1, 16], "BYTES")
    i1.set_data_from_numpy(b)
    r = g.infer("simple_string", [i0, i1])
    expect_array(r.as_numpy("OUTPUT0"), np.array([[str(i + 2).encode() for i in range(16)]], dtype=np.object_), "OUTPUT0")


def async_infer():
    results = queue.Queue()
    for k in range(8):
        g.async_infer("simple", simple_inputs(A + k, B), partial(lambda k, result, error: results.put((k, result, error)), k))
    for _ in range(8):
        k, res, err = results.get(timeout=30)
        expect_true(err is None, f"async_infer {k}: {err}")
        expect_array(res.as_numpy("OUTPUT0"), A + k + B, f"async OUTPUT0 #{k}")


def errors():
    expect_server_error(lambda: g.infer("no_such_model", simple_inputs(A, B)), "StatusCode.NOT_FOUND", contains="no_such_model")
    bad = grpcclient.InferInput("INPUT0", [1, 16], "FP32")
    bad.set_data_from_numpy(A.astype(np.float32))
    expect_server_error(lambda: g.infer("simple", [bad, simple_inputs(A, B)[1]]), "StatusCode.INVALID_ARGUMENT", contains="INPUT0")
    short = grpcclient.InferInput("INPUT0", [1, 8], "INT32")
    short.set_data_from_numpy(A[:, :8])
    expect_server_error(lambda: g.infer("simple", [short, simple_inputs(A, B)[1]]), "StatusCode.INVALID_ARGUMENT", what="wrong shape")
    expect_server_error(lambda: g.get_model_metadata("simple", "x"), "StatusCode.INVALID_ARGUMENT", what="bad version")
    expect_server_error(lambda: g.get_model_metadata("simple", "9"), "StatusCode.NOT_FOUND", what="unknown version")
    rin = [grpcclient.InferInput("IN", [1], "INT32"), grpcclient.InferInput("DELAY", [1], "UINT32"), grpcclient.InferInput("WAIT", [1], "UINT32")]
    for t, v in zip(rin, [np.array([1], np.int32), np.array([0], np.uint32), np.array([0], np.uint32)]):
        t.set_data_from_numpy(v)
    expect_server_error(lambda: g.infer("repeat_wasm", rin), "StatusCode.UNIMPLEMENTED", contains="decoupled", what="decoupled over ModelInfer")


def statistics():
    before = g.get_inference_statistics("simple", as_json=True)["model_stats"][0]
    n0 = int(before["inference_stats"]["success"].get("count", 0))
    for _ in range(3):
        g.infer("simple", simple_inputs(A, B))
    after = g.get_inference_statistics("simple", as_json=True)["model_stats"][0]
    run.observe("statistics:simple", after)
    expect_eq(int(after["inference_stats"]["success"]["count"]), n0 + 3, "success count")
    everything = g.get_inference_statistics(as_json=True)["model_stats"]
    expect_true(any(s["name"] == "simple" for s in everything), "all-models statistics list simple")
    expect_server_error(lambda: g.get_inference_statistics("no_such_model"), "StatusCode.INVALID_ARGUMENT", contains="not available")


def repository():
    idx = g.get_model_repository_index(as_json=True)["models"]
    expect_true({"name": "simple", "version": "1", "state": "READY"} in idx, f"index has simple READY: {idx}")
    expect_eq(g.is_model_ready("simple_int8"), False, "simple_int8 not loaded")
    g.load_model("simple_int8")
    expect_eq(g.is_model_ready("simple_int8"), True, "simple_int8 loaded")
    g.unload_model("simple_int8")
    expect_eq(g.is_model_ready("simple_int8"), False, "simple_int8 unloaded")
    # config override + file override (raw bytes over gRPC): simple's ONNX under a new name
    onnx = open(os.path.join(run.args.repo, "simple", "1", "model.onnx"), "rb").read()
    cfg = '{"name":"grpc_upload","backend":"onnxruntime","max_batch_size":8,' \
          '"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]},{"name":"INPUT1","data_type":"TYPE_INT32","dims":[16]}],' \
          '"output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[16]},{"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[16]}]}'
    g.load_model("grpc_upload", config=cfg, files={"file:1/model.onnx": onnx})
    r = g.infer("grpc_upload", simple_inputs(A, B))
    expect_array(r.as_numpy("OUTPUT0"), A + B, "uploaded model OUTPUT0")
    expect_server_error(lambda: g.load_model("bad_upload", config=cfg, files={"file:../escape.onnx": onnx}), "StatusCode.INVALID_ARGUMENT", what="path escape")
    g.unload_model("grpc_upload")
    expect_eq(g.is_model_ready("grpc_upload"), False, "grpc_upload unloaded")


def log_settings():
    s = g.get_log_settings(as_json=True)["settings"]
    expect_eq(s["log_info"], {"bool_param": True}, "log_info")
    u = g.update_log_settings({"log_verbose_level": 1}, as_json=True)["settings"]
    expect_eq(u["log_verbose_level"], {"uint32_param": 1}, "log_verbose_level updated")
    g.update_log_settings({"log_verbose_level": 0})
    expect_server_error(lambda: g.update_log_settings({"log_file": "/tmp/x"}), "StatusCode.UNIMPLEMENTED", what="log_file")


def trace_settings():
    s = g.get_trace_settings(as_json=True)["settings"]
    expect_eq(s["trace_rate"], {"value": ["1000"]}, "trace_rate")
    u = g.update_trace_settings(model_name="simple", settings={"trace_rate": "7"}, as_json=True)["settings"]
    expect_eq(u["trace_rate"], {"value": ["7"]}, "per-model trace_rate")
    g.update_trace_settings(model_name="simple", settings={"trace_rate": None})
    expect_eq(g.get_trace_settings(model_name="simple", as_json=True)["settings"]["trace_rate"], {"value": ["1000"]}, "cleared")


def stream_collect(requests, empty_final=False, timeout=30):
    """Send requests on one stream; gather (result, error) pairs until the stream is idle."""
    got = queue.Queue()
    c = grpcclient.InferenceServerClient(url=run.args.grpc_url)
    c.start_stream(callback=lambda result, error: got.put((result, error)))
    for model, inputs, rid in requests:
        c.async_stream_infer(model, inputs, request_id=rid, enable_empty_final_response=empty_final)
    return c, got


def repeat_inputs(values, delays):
    ins = [grpcclient.InferInput("IN", [len(values)], "INT32"), grpcclient.InferInput("DELAY", [len(values)], "UINT32"), grpcclient.InferInput("WAIT", [1], "UINT32")]
    ins[0].set_data_from_numpy(np.array(values, dtype=np.int32))
    ins[1].set_data_from_numpy(np.array(delays, dtype=np.uint32))
    ins[2].set_data_from_numpy(np.array([0], dtype=np.uint32))
    return ins


def stream_decoupled():
    values = [4, 2, 0, 1]
    c, got = stream_collect([("repeat_wasm", repeat_inputs(values, [10, 10, 10, 10]), "rep-1")], empty_final=True)
    outs, finals = [], []
    while True:
        res, err = got.get(timeout=30)
        expect_true(err is None, f"stream error {err}")
        resp = res.get_response()
        expect_eq(resp.id, "rep-1", "id on every response")
        final = resp.parameters["triton_final_response"].bool_param
        finals.append(final)
        if final:
            expect_eq(len(resp.outputs), 0, "the empty final response has no outputs")
            break
        outs.append(int(res.as_numpy("OUT")[0]))
    c.stop_stream()
    expect_eq(outs, values, "one response per element, in order")
    expect_eq(finals, [False] * len(values) + [True], "triton_final_response flags")
    # without enable_empty_final_response: exactly the data responses, the last one not final
    c, got = stream_collect([("repeat_wasm", repeat_inputs([9, 8], [0, 0]), "rep-2")])
    seen = [got.get(timeout=30) for _ in range(2)]
    c.stop_stream()
    expect_eq([int(r.as_numpy("OUT")[0]) for r, _ in seen], [9, 8], "values")
    expect_true(got.empty(), "no empty final response unless asked")


def stream_ordinary_and_errors():
    c, got = stream_collect([("simple", simple_inputs(A, B), "s-1"), ("no_such_model", simple_inputs(A, B), "s-2"), ("simple", simple_inputs(A + 1, B), "s-3")])
    seen = {}
    for _ in range(3):
        res, err = got.get(timeout=30)
        if err is not None:
            seen["error"] = str(err)
        else:
            seen[res.get_response().id] = res
    c.stop_stream()
    expect_array(seen["s-1"].as_numpy("OUTPUT0"), A + B, "s-1 OUTPUT0")
    expect_array(seen["s-3"].as_numpy("OUTPUT0"), A + 1 + B, "s-3 OUTPUT0")
    expect_true("triton_final_response" not in seen["s-1"].get_response().parameters, "no final flag for a non-decoupled model")
    expect_true("no_such_model" in seen.get("error", ""), f"error for the unknown model: {seen.get('error')}")


def cuda_shm_unsupported():
    # as Triton built without GPUs (server grpc_server.cc): register is INVALID_ARG, whether or not client shm is on
    expect_server_error(lambda: g.register_cuda_shared_memory("r", b"\0" * 64, 0, 64), "StatusCode.INVALID_ARGUMENT", contains="GPUs not supported")
    expect_eq(g.get_cuda_shared_memory_status(as_json=True), {}, "CUDA shm status: no regions")
    # this server runs without --allow-client-shm: system shared memory is off, as Triton's default
    expect_server_error(lambda: g.register_system_shared_memory("r", "/r", 64), "StatusCode.UNIMPLEMENTED", contains="--allow-client-shm")
    expect_server_error(lambda: run.client.register_system_shared_memory("r", "/r", 64), "501", contains="--allow-client-shm")
    expect_eq(g.get_system_shared_memory_status(as_json=True), {}, "system shm status: no regions")


for name, fn in [
    ("health", health),
    ("server metadata", server_metadata),
    ("model metadata", model_metadata),
    ("model config as protobuf ModelConfig", model_config),
    ("infer simple (raw contents, id echoed)", infer_simple),
    ("infer batch 8, requested output subset", infer_batch8_and_subset),
    ("infer simple_string (BYTES)", infer_string),
    ("async_infer x8", async_infer),
    ("errors with Triton's gRPC status codes", errors),
    ("statistics", statistics),
    ("repository index / load / unload / config and file overrides", repository),
    ("log settings", log_settings),
    ("trace settings", trace_settings),
    ("stream: decoupled model with triton_final_response", stream_decoupled),
    ("stream: ordinary model and errors", stream_ordinary_and_errors),
    ("CUDA shared memory UNSUPPORTED, system shared memory off", cuda_shm_unsupported),
]:
    run.case(name, fn)
g.close()
run.finish()
