"""KServe's own Python client (`kserve.InferenceRESTClient`, PyPI `kserve`, Open Inference Protocol
v2 over REST) against Warden: health live / ready (the client reads `{"live": true}` /
`{"ready": true}` from the body), model ready, inference with JSON and with binary tensor data
(inputs and outputs), and an error (unknown model: the client shows the `error` text only when
the Content-Type is exactly `application/json`).

Usage: kserve_client.py --url host:port --models simple,simple_string

Each model in --models must be one of Triton's example add/sub models (example_models.py); the
outputs are compared exactly.
"""

import asyncio

import httpx
import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.infer_type import RequestedOutput

import example_models as ex
from compat_common import Mismatch, Run, bytes_of, expect_array, expect_eq, expect_true

run = Run("kserve_client.py", __doc__)
models = [m for m in run.args.models.split(",") if m]
BASE = f"http://{run.args.url}"
loop = asyncio.new_event_loop()
kclient = InferenceRESTClient(RESTConfig(protocol="v2", retries=1, timeout=30))


def call(coro):
    return loop.run_until_complete(coro)


def health():
    expect_eq(call(kclient.is_server_live(BASE)), True, "is_server_live()")
    expect_eq(call(kclient.is_server_ready(BASE)), True, "is_server_ready()")


def model_ready(model):
    def fn():
        expect_eq(call(kclient.is_model_ready(BASE, model)), True, f"is_model_ready({model!r})")

    return fn


def unknown_model_not_ready():
    expect_eq(call(kclient.is_model_ready(BASE, "no_such_model")), False, "is_model_ready('no_such_model')")


def normalise(arr, datatype):
    return bytes_of(arr) if datatype == "BYTES" else arr


def infer(model, binary):
    """Batch-2 request; `binary`: inputs as binary tensor data and `binary_data_output: true`."""

    def fn():
        inputs, expected = ex.make(model, 2, seed=5 if binary else 3)
        datatype = ex.ALL[model]
        infer_inputs = []
        for name, arr in inputs.items():
            i = InferInput(name, list(arr.shape), datatype)
            i.set_data_from_numpy(arr, binary_data=binary)
            infer_inputs.append(i)
        request = InferRequest(
            model_name=model,
            infer_inputs=infer_inputs,
            request_id=f"kserve-{model}-{int(binary)}",
            parameters={"binary_data_output": True} if binary else None,
            # An output listed in the request is binary only with its own `binary_data: true`
            # (Triton's http_server.cc CheckBinaryOutputData: `binary_data_output` is the default
            # for outputs the request does not list).
            request_outputs=[RequestedOutput(n, parameters={"binary_data": True} if binary else None) for n in ("OUTPUT0", "OUTPUT1")],
        )
        headers = {}
        response = call(kclient.infer(BASE, request, model_name=model, response_headers=headers))
        expect_eq(response.id, f"kserve-{model}-{int(binary)}", "response id")
        expect_eq(response.model_name, model, "response model_name")
        # Binary outputs: the JSON header is shorter than the body (the client reads the tensors
        # after it); JSON outputs: no such header.
        header_length = {k.lower(): v for k, v in headers.items()}.get("inference-header-content-length")
        expect_eq(header_length is not None, binary, "Inference-Header-Content-Length present")
        for name, want in expected.items():
            out = response.get_output_by_name(name)
            if out is None:
                raise Mismatch(f"{name}: missing from the response")
            expect_eq(out.datatype, datatype, f"{name} datatype")
            expect_eq(list(out.shape), list(want.shape), f"{name} shape")
            got = out.as_numpy()
            expect_array(normalise(got, datatype), want if datatype == "BYTES" else want.astype(got.dtype), name)

    return fn


def unknown_model_error():
    inputs, _ = ex.make("simple", 1)
    infer_inputs = []
    for name, arr in inputs.items():
        i = InferInput(name, list(arr.shape), "INT32")
        i.set_data_from_numpy(arr, binary_data=False)
        infer_inputs.append(i)
    try:
        call(kclient.infer(BASE, InferRequest("no_such_model", infer_inputs), model_name="no_such_model"))
    except httpx.HTTPStatusError as e:
        expect_eq(e.response.status_code, 404, "HTTP status")
        want = "Request for unknown model: 'no_such_model' is not found"
        expect_true(str(e).startswith(want + ","), f"the client shows the server's error text: {str(e)!r}")
        return
    raise Mismatch("infer on an unknown model: expected httpx.HTTPStatusError, got success")


run.case("kserve: server live and ready", health)
for m in models:
    run.case(f"kserve: {m} model ready", model_ready(m))
run.case("kserve: unknown model not ready", unknown_model_not_ready)
for m in models:
    run.case(f"kserve: {m} infer JSON", infer(m, binary=False))
    run.case(f"kserve: {m} infer binary", infer(m, binary=True))
run.case("kserve: unknown model error text", unknown_model_error)
call(kclient.close())
loop.close()
run.finish()
