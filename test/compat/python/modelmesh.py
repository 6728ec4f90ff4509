"""KServe ModelMesh's built-in Triton adapter, played by tritonclient.grpc: the calls the adapter
makes on `runtimeManagementPort` (8001) against a server started with ModelMesh's tritonserver
launch line — readiness, RepositoryModelLoad, ModelReady, ModelMetadata, ModelInfer (with the
routing metadata ModelMesh adds), RepositoryModelUnload — in that order, twice (reload works).

Run: modelmesh.py --url <http host:port> --grpc-url <grpc host:port> --models simple
"""

import numpy as np
import tritonclient.grpc as grpcclient

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true

run = Run("modelmesh.py", __doc__, lambda p: p.add_argument("--grpc-url", required=True))
g = grpcclient.InferenceServerClient(url=run.args.grpc_url)
model = run.args.models or "simple"
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 5, dtype=np.int32)
HEADERS = {"mm-vmodel-id": model, "mm-model-id": f"{model}__isvc-1"}


def inputs():
    i0 = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
    i0.set_data_from_numpy(A)
    i1 = grpcclient.InferInput("INPUT1", [1, 16], "INT32")
    i1.set_data_from_numpy(B)
    return [i0, i1]


def server_up():
    expect_eq(g.is_server_live(), True, "live")
    # --strict-readiness=false: ready although no model is loaded
    expect_eq(g.is_server_ready(), True, "ready with nothing loaded")
    expect_eq(g.is_model_ready(model), False, "model not loaded yet")


def load_and_serve(round_):
    def fn():
        g.load_model(model, headers=HEADERS)
        expect_eq(g.is_model_ready(model, headers=HEADERS), True, "ready after RepositoryModelLoad")
        md = g.get_model_metadata(model, headers=HEADERS, as_json=True)
        expect_eq([t["name"] for t in md["inputs"]], ["INPUT0", "INPUT1"], "metadata inputs")
        for _ in range(4):
            r = g.infer(model, inputs(), headers=HEADERS)
            expect_array(r.as_numpy("OUTPUT0"), A + B, f"round {round_} OUTPUT0")
        g.unload_model(model, headers=HEADERS)
        expect_eq(g.is_model_ready(model, headers=HEADERS), False, "not ready after RepositoryModelUnload")
        expect_server_error(lambda: g.infer(model, inputs(), headers=HEADERS), "StatusCode.NOT_FOUND", contains="has no available versions", what="infer after unload")

    return fn


run.case("server live and ready (strict readiness off)", server_up)
run.case("load, ready, metadata, infer, unload", load_and_serve(1))
run.case("again: reload after unload", load_and_serve(2))
g.close()
run.finish()
