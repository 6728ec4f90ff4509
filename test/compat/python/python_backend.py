"""Warden's Python backend through tritonclient.http: the default repository's Python samples.

Usage: python_backend.py --url host:port

add_sub_python is loaded in explicit mode and answers as Triton's python_backend add_sub example
(FP32 [4], OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1; binary and JSON tensors);
bls_python (a BLS call to simple) returns simple's sums and differences; the decoupled
repeat_python is refused on /infer; statistics count the Python models' inferences; unload works.
"""

import numpy as np
import tritonclient.http as httpclient

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true

run = Run("python_backend.py", __doc__)
client = run.client


def load():
    for m in ("add_sub_python", "bls_python", "simple", "repeat_python"):
        client.load_model(m)
        expect_eq(client.is_model_ready(m), True, f"{m} ready")
    cfg = client.get_model_config("add_sub_python")
    expect_eq(cfg["backend"], "python", "backend")


def add_sub(binary):
    def case():
        a = np.random.rand(4).astype(np.float32)
        b = np.random.rand(4).astype(np.float32)
        ins = []
        for n, v in (("INPUT0", a), ("INPUT1", b)):
            t = httpclient.InferInput(n, [4], "FP32")
            t.set_data_from_numpy(v, binary_data=binary)
            ins.append(t)
        outs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("OUTPUT0", "OUTPUT1")]
        r = client.infer("add_sub_python", ins, outputs=outs, request_id="py-1")
        expect_eq(r.get_response()["id"], "py-1", "request id")
        expect_array(r.as_numpy("OUTPUT0"), a + b, "OUTPUT0")
        expect_array(r.as_numpy("OUTPUT1"), a - b, "OUTPUT1")

    return case


def bls():
    a = np.arange(16, dtype=np.int32).reshape(1, 16)
    b = np.ones((1, 16), dtype=np.int32)
    ins = [httpclient.InferInput("INPUT0", [1, 16], "INT32"), httpclient.InferInput("INPUT1", [1, 16], "INT32")]
    ins[0].set_data_from_numpy(a)
    ins[1].set_data_from_numpy(b)
    r = client.infer("bls_python", ins)
    expect_array(r.as_numpy("OUTPUT0"), a + b, "OUTPUT0")
    expect_array(r.as_numpy("OUTPUT1"), a - b, "OUTPUT1")


def decoupled_refused():
    ins = [httpclient.InferInput("IN", [1], "INT32"), httpclient.InferInput("DELAY", [1], "UINT32"), httpclient.InferInput("WAIT", [1], "UINT32")]
    ins[0].set_data_from_numpy(np.array([1], np.int32))
    ins[1].set_data_from_numpy(np.array([0], np.uint32))
    ins[2].set_data_from_numpy(np.array([0], np.uint32))
    expect_server_error(lambda: client.infer("repeat_python", ins), "501", contains="decoupled", what="infer on a decoupled model")


def statistics():
    stats = {s["name"]: s for s in client.get_inference_statistics()["model_stats"]}
    run.observe("statistics", {k: stats[k]["inference_count"] for k in ("add_sub_python", "bls_python", "simple") if k in stats})
    expect_eq(stats["add_sub_python"]["inference_count"], 2, "add_sub_python inference_count")
    expect_eq(stats["bls_python"]["inference_count"], 1, "bls_python inference_count")
    expect_true(stats["simple"]["inference_count"] >= 1, "simple counted the BLS call")


def unload():
    client.unload_model("add_sub_python")
    expect_eq(client.is_model_ready("add_sub_python"), False, "unloaded")


run.case("load the Python samples", load)
run.case("add_sub_python, binary tensors", add_sub(True))
run.case("add_sub_python, JSON tensors", add_sub(False))
run.case("bls_python calls simple", bls)
run.case("decoupled repeat_python refused on infer", decoupled_refused)
run.case("statistics", statistics)
run.case("unload", unload)
run.finish()
