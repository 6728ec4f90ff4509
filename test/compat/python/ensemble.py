"""Ensembles through tritonclient.http: the default repository's add_sub_ensemble
(add_sub_wasm -> addsub_onnx, so OUTPUT0 = 2 * INPUT0 and OUTPUT1 = 2 * INPUT1).

Usage: ensemble.py --url host:port

Loading the ensemble in explicit mode loads its composing models too (Triton's rule); metadata
and config show platform "ensemble"; inference works with binary and JSON tensors and with an
output subset; the statistics count each step as an inference of its composing model.
"""

import numpy as np
import tritonclient.http as httpclient

from compat_common import Run, expect_array, expect_eq, expect_true

run = Run("ensemble.py", __doc__)
client = run.client
E = "add_sub_ensemble"


def load_with_composing():
    client.load_model(E)
    expect_eq(client.is_model_ready(E), True, "ensemble ready")
    for m in ("add_sub_wasm", "addsub_onnx"):
        expect_eq(client.is_model_ready(m), True, f"composing model {m} ready")


def metadata_config():
    md = client.get_model_metadata(E)
    run.observe("metadata", md)
    expect_eq(md["platform"], "ensemble", "platform")
    expect_eq([i["name"] for i in md["inputs"]], ["INPUT0", "INPUT1"], "inputs")
    cfg = client.get_model_config(E)
    run.observe("config", cfg)
    expect_eq(cfg["platform"], "ensemble", "config platform")
    expect_eq(len(cfg["ensemble_scheduling"]["step"]), 2, "steps")


def make(binary):
    a = np.arange(16, dtype=np.float32)
    b = np.full(16, 0.5, dtype=np.float32)
    tensors = []
    for n, v in (("INPUT0", a), ("INPUT1", b)):
        t = httpclient.InferInput(n, [16], "FP32")
        t.set_data_from_numpy(v, binary_data=binary)
        tensors.append(t)
    return a, b, tensors


def infer(binary):
    def case():
        a, b, tensors = make(binary)
        outputs = [httpclient.InferRequestedOutput(n, binary_data=binary) for n in ("OUTPUT0", "OUTPUT1")]
        result = client.infer(E, tensors, outputs=outputs, request_id="ens-1")
        expect_eq(result.get_response()["id"], "ens-1", "request id echoed")
        expect_array(result.as_numpy("OUTPUT0"), a * 2, "OUTPUT0")
        expect_array(result.as_numpy("OUTPUT1"), b * 2, "OUTPUT1")

    return case


def subset():
    a, b, tensors = make(True)
    result = client.infer(E, tensors, outputs=[httpclient.InferRequestedOutput("OUTPUT1")])
    expect_true(result.as_numpy("OUTPUT0") is None, "OUTPUT0 not returned")
    expect_array(result.as_numpy("OUTPUT1"), b * 2, "OUTPUT1")


def statistics():
    stats = {s["name"]: s for s in client.get_inference_statistics()["model_stats"]}
    run.observe("statistics", {k: stats[k]["inference_count"] for k in (E, "add_sub_wasm", "addsub_onnx") if k in stats})
    for m in (E, "add_sub_wasm", "addsub_onnx"):
        expect_eq(stats[m]["inference_count"], 3, f"{m} inference_count")
        expect_eq(stats[m]["inference_stats"]["success"]["count"], 3, f"{m} success count")


run.case("load loads the composing models", load_with_composing)
run.case("metadata and config", metadata_config)
run.case("infer, binary tensors", infer(True))
run.case("infer, JSON tensors", infer(False))
run.case("infer, output subset [OUTPUT1]", subset)
run.case("statistics per composing model", statistics)
run.finish()
