"""Multi-tenant mode through tritonclient.grpc: the client unchanged, the token in `headers=`.

Usage: tenancy_grpc.py --url host:port --grpc-url host:port --token-a <token> --token-b <token> --wasm <identity component>

gRPC metadata keys are lower case (HTTP/2 header names; grpcio refuses `Authorization` before
anything is sent: "Invalid metadata"), so the gRPC client passes
`headers={"authorization": "Bearer <token>"}`. Tenant A uploads with `load_model(config, files)`
and infers; tenant B cannot see A's model (NOT_FOUND, the text of a model that does not exist);
no token is UNAUTHENTICATED; a stream carries the token in `start_stream(headers=...)`.
"""

import queue
from functools import partial

import numpy as np
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from compat_common import Mismatch, Run, expect_array, expect_eq, expect_true, identity_upload, tenant_args


def add_args(p):
    p.add_argument("--grpc-url", required=True)
    tenant_args(p)


run = Run("tenancy_grpc.py", __doc__, add_args)
g = grpcclient.InferenceServerClient(url=run.args.grpc_url)
A = {"authorization": f"Bearer {run.args.token_a}"}
B = {"authorization": f"Bearer {run.args.token_b}"}
CONFIG, WASM = identity_upload(run.args.wasm)


def inputs(values):
    inp = grpcclient.InferInput("INPUT0", [len(values)], "FP32")
    inp.set_data_from_numpy(np.array(values, dtype=np.float32))
    return [inp]


def expect_grpc_error(fn, status, what):
    try:
        fn()
    except InferenceServerException as e:
        if e.status() != status:
            raise Mismatch(f"{what}: expected {status}, got {e.status()} ({e.message()!r})")
        return e
    raise Mismatch(f"{what}: expected {status}, got success")


@run.case("no token: UNAUTHENTICATED, health open")
def no_token():
    expect_true(g.is_server_live(), "health needs no token")
    expect_grpc_error(lambda: g.get_model_metadata("m"), "StatusCode.UNAUTHENTICATED", "metadata without a token")


@run.case("an upper-case Authorization key is refused by grpcio itself")
def upper_case_key_refused_by_grpcio():
    # Documented (docs/tenancy.md "Over gRPC"): grpcio validates metadata keys before sending.
    e = expect_grpc_error(lambda: g.is_model_ready("m", headers={"Authorization": A["authorization"]}), "StatusCode.INTERNAL", "Authorization key")
    expect_true("Invalid metadata" in (e.message() or ""), f"grpcio's own refusal, got {e.message()!r}")


@run.case("tenant A uploads and infers with headers={'authorization': ...}")
def a_uploads_and_infers():
    g.load_model("m", headers=A, config=CONFIG, files={"file:1/model.wasm": WASM})
    expect_true(g.is_model_ready("m", headers=A), "A's m ready")
    out = g.infer("m", inputs([1.5, -2.0]), headers=A).as_numpy("OUTPUT0")
    expect_array(out, np.array([1.5, -2.0], dtype=np.float32), "A's m output")


@run.case("tenant B cannot see A's model")
def b_cannot_see():
    absent = expect_grpc_error(lambda: g.get_model_metadata("absent", headers=B), "StatusCode.NOT_FOUND", "absent model")
    theirs = expect_grpc_error(lambda: g.get_model_metadata("m", headers=B), "StatusCode.NOT_FOUND", "A's model seen by B")
    expect_eq(theirs.message().replace("'m'", "'X'"), absent.message().replace("'absent'", "'X'"), "same text as a model that does not exist")
    expect_eq(g.is_model_ready("m", headers=B), False, "A's m is not ready for B")


@run.case("a stream carries the token from start_stream(headers=...)")
def stream_with_token():
    got = queue.Queue()
    g.start_stream(callback=partial(lambda q, result, error: q.put((result, error)), got), headers=A)
    g.async_stream_infer("m", inputs([7.0]))
    result, error = got.get(timeout=30)
    g.stop_stream()
    expect_true(error is None, f"stream error {error}")
    expect_array(result.as_numpy("OUTPUT0"), np.array([7.0], dtype=np.float32), "stream output")


try:
    g.close()
except Exception:
    pass
run.finish()
