"""Inference on Triton's example models through tritonclient.http, exact results.

Cases per batching model (simple, simple_string, simple_int8) and batch size 1 and 8:
input encoding x output encoding (binary/JSON both ways, the client's default included),
batch 9 rejected with Triton's message, a requested-output subset, per-output binary_data,
the request id echoed. addsub_onnx (FP32, max_batch_size 0) gets the same without the batch
dimension. Then async_infer with 16 requests in flight, the asyncio client (tritonclient.http.aio, an
aiohttp stack), gzip / deflate request and response compression (spec §1.14), and an explicit
model version.

Usage: infer_models.py --url host:port [--models simple,simple_string,...]
"""

import numpy as np
import tritonclient.http as httpclient

import example_models as ex
from compat_common import (
    Run,
    bytes_of,
    expect_array,
    expect_eq,
    expect_server_error,
    expect_true,
)

run = Run("infer_models.py", __doc__)
client = run.client
models = [m for m in run.args.models.split(",") if m] or list(ex.ALL)


def build_inputs(model, inputs, binary):
    return ex.input_tensors(httpclient, model, inputs, binary)


def check_outputs(model, result, expected, names, binary_by_name):
    """Exact values, and the wire form of each output: binary outputs carry
    parameters.binary_data_size (and no data), JSON outputs carry data."""
    datatype = ex.ALL[model]
    response = result.get_response()
    expect_eq(response.get("model_name"), model, "response model_name")
    expect_eq(response.get("model_version"), "1", "response model_version")
    got_names = [o["name"] for o in response.get("outputs", [])]
    expect_eq(sorted(got_names), sorted(names), "response output names")
    for o in response["outputs"]:
        name = o["name"]
        want = expected[name]
        expect_eq(o.get("datatype"), datatype, f"{name} datatype")
        expect_eq(o.get("shape"), list(want.shape), f"{name} shape")
        params = o.get("parameters") or {}
        if binary_by_name[name]:
            expect_eq(
                params.get("binary_data_size"),
                ex.byte_size(want, datatype),
                f"{name} binary_data_size",
            )
            expect_true("data" not in o, f"{name} is binary but the response also carries 'data'")
        else:
            expect_true("binary_data_size" not in params, f"{name} was requested as JSON but came binary")
            expect_true("data" in o, f"{name} was requested as JSON but has no 'data'")
        got = result.as_numpy(name)
        if datatype == "BYTES":
            got = bytes_of(got)
        expect_array(got, want, f"{model} {name}")


def infer_case(model, batch, in_binary, out_mode, seed):
    """out_mode: 'default' (no outputs listed: client sets binary_data_output=true),
    'binary' / 'json' (both outputs listed with that binary_data)."""

    def fn():
        inputs, expected = ex.make(model, batch, seed)
        outputs = None
        if out_mode == "default":
            binary = {"OUTPUT0": True, "OUTPUT1": True}
        else:
            b = out_mode == "binary"
            outputs = [httpclient.InferRequestedOutput(n, binary_data=b) for n in ("OUTPUT0", "OUTPUT1")]
            binary = {"OUTPUT0": b, "OUTPUT1": b}
        result = client.infer(model, build_inputs(model, inputs, in_binary), outputs=outputs)
        check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], binary)

    return fn


def subset_case(model, batch):
    def fn():
        inputs, expected = ex.make(model, batch, 5)
        outputs = [httpclient.InferRequestedOutput("OUTPUT1", binary_data=True)]
        result = client.infer(model, build_inputs(model, inputs, True), outputs=outputs)
        check_outputs(model, result, expected, ["OUTPUT1"], {"OUTPUT1": True})
        expect_true(result.as_numpy("OUTPUT0") is None, "OUTPUT0 returned although not requested")

    return fn


def mixed_case(model, batch):
    def fn():
        inputs, expected = ex.make(model, batch, 6)
        outputs = [
            httpclient.InferRequestedOutput("OUTPUT0", binary_data=True),
            httpclient.InferRequestedOutput("OUTPUT1", binary_data=False),
        ]
        result = client.infer(model, build_inputs(model, inputs, False), outputs=outputs)
        check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": False})

    return fn


def request_id_case(model, batch):
    def fn():
        inputs, expected = ex.make(model, batch, 7)
        result = client.infer(model, build_inputs(model, inputs, True), request_id="compat-42")
        expect_eq(result.get_response().get("id"), "compat-42", "response id")
        check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": True})

    return fn


def batch_too_large_case(model):
    def fn():
        inputs, _ = ex.make(model, 9, 0)
        expect_server_error(
            lambda: client.infer(model, build_inputs(model, inputs, True)),
            "400",
            message=f"[request id: <id_unknown>] inference request batch-size must be <= 8 for '{model}'",
            what=f"{model} batch 9",
        )

    return fn


def nobatch_shape_case(model):
    def fn():
        inputs, _ = ex.make(model, None, 0)
        batched = {k: v.reshape(1, 16) for k, v in inputs.items()}
        expect_server_error(
            lambda: client.infer(model, build_inputs(model, batched, True)),
            "400",
            contains=f"unexpected shape for input 'INPUT0' for model '{model}'. Expected [16], got [1,16]",
            what=f"{model} with a batch dimension",
        )

    return fn


def async_case(model, batch_of):
    """16 requests in flight at once (client concurrency 8), each with its own data."""

    def fn():
        pending = []
        for i in range(16):
            batch = batch_of(i)
            inputs, expected = ex.make(model, batch, 100 + i)
            req = client.async_infer(model, build_inputs(model, inputs, i % 2 == 0), request_id=f"a{i}")
            pending.append((i, req, expected))
        for i, req, expected in pending:
            result = req.get_result(timeout=30)
            expect_eq(result.get_response().get("id"), f"a{i}", f"async request {i} id")
            check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": True})

    return fn


def aio_case(model, batch):
    """The asyncio client: a different HTTP stack (aiohttp) on the same protocol."""

    def fn():
        import asyncio

        import tritonclient.http.aio as aioclient

        async def go():
            async with aioclient.InferenceServerClient(url=run.args.url) as c:
                expect_eq(await c.is_server_live(), True, "aio is_server_live")
                expect_eq(await c.is_model_ready(model), True, "aio is_model_ready")
                inputs, expected = ex.make(model, batch, 40)
                result = await c.infer(model, ex.input_tensors(aioclient, model, inputs))
                check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": True})

        asyncio.run(go())

    return fn


def compression_case(model, batch, algorithm):
    def fn():
        inputs, expected = ex.make(model, batch, 50)
        result = client.infer(
            model,
            build_inputs(model, inputs, True),
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": True})

    return fn


def version_case(model, batch):
    def fn():
        inputs, expected = ex.make(model, batch, 60)
        result = client.infer(model, build_inputs(model, inputs, True), model_version="1")
        check_outputs(model, result, expected, ["OUTPUT0", "OUTPUT1"], {"OUTPUT0": True, "OUTPUT1": True})

    return fn


modes = [(True, "default"), (False, "json"), (False, "binary"), (True, "json")]
for model in models:
    batched = ex.MAX_BATCH[model] > 0
    batches = [1, 8] if batched else [None]
    for batch in batches:
        tag = f"batch {batch}" if batched else "no batch"
        for seed, (in_binary, out_mode) in enumerate(modes):
            name = f"{model} {tag}: {'binary' if in_binary else 'JSON'} inputs, {out_mode} outputs"
            run.case(name, infer_case(model, batch, in_binary, out_mode, seed))
        run.case(f"{model} {tag}: requested output subset [OUTPUT1]", subset_case(model, batch))
        run.case(f"{model} {tag}: binary_data per output (OUTPUT0 binary, OUTPUT1 JSON)", mixed_case(model, batch))
        run.case(f"{model} {tag}: request id echoed", request_id_case(model, batch))
    if batched:
        run.case(f"{model}: batch 9 rejected", batch_too_large_case(model))
    else:
        run.case(f"{model}: batch dimension rejected", nobatch_shape_case(model))

if "simple" in models:
    run.case("simple: async_infer x16", async_case("simple", lambda i: 1 + i % 8))
if "addsub_onnx" in models:
    run.case("addsub_onnx: async_infer x16", async_case("addsub_onnx", lambda i: None))
if "simple" in models:
    run.case("simple: model_version '1'", version_case("simple", 2))
    run.case("simple: tritonclient.http.aio infer", aio_case("simple", 3))
    run.case("simple: gzip request and response", compression_case("simple", 4, "gzip"))
    run.case("simple: deflate request and response", compression_case("simple", 4, "deflate"))
if "simple_string" in models:
    run.case("simple_string: gzip request and response", compression_case("simple_string", 8, "gzip"))

run.finish()
