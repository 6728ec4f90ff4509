"""Multi-tenant mode through tritonclient.http: the client unchanged, only an Authorization header.

Usage: tenancy.py --url host:port --token-a <token> --token-b <token> --wasm <identity component>

Tenant A uploads a sandboxed model with Triton's own load API (`load_model(config=..., files=...)`),
infers on it; tenant B cannot see it (404 with the text of a model that does not exist), uploads
its own model of the same name; a request without a token gets 401.
"""

import json

import numpy as np
import tritonclient.http as httpclient

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true


def add_args(p):
    p.add_argument("--token-a", required=True)
    p.add_argument("--token-b", required=True)
    p.add_argument("--wasm", required=True, help="path of an identity component (FP32 [-1] -> FP32 [-1])")


run = Run("tenancy.py", __doc__, add_args)
client = run.client
A = {"Authorization": f"Bearer {run.args.token_a}"}
B = {"Authorization": f"Bearer {run.args.token_b}"}
with open(run.args.wasm, "rb") as f:
    WASM = f.read()
CONFIG = json.dumps(
    {
        "backend": "wasm",
        "max_batch_size": 0,
        "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
        "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
    }
)


def infer(headers, model, values):
    inp = httpclient.InferInput("INPUT0", [len(values)], "FP32")
    inp.set_data_from_numpy(np.array(values, dtype=np.float32))
    return client.infer(model, [inp], headers=headers).as_numpy("OUTPUT0")


def no_token():
    expect_true(client.is_server_live(), "health needs no token")
    expect_server_error(lambda: client.get_model_metadata("m"), "401", contains="authentication required", what="metadata without a token")


def a_uploads():
    client.load_model("m", headers=A, config=CONFIG, files={"file:1/model.wasm": WASM})
    expect_true(client.is_model_ready("m", headers=A), "A's m ready")


def a_infers():
    expect_array(infer(A, "m", [1.5, -2.0, 3.0]), np.array([1.5, -2.0, 3.0], dtype=np.float32), "A's m output")


def b_cannot_see():
    absent = expect_server_error(lambda: client.get_model_metadata("absent", headers=B), "404", what="absent model")
    theirs = expect_server_error(lambda: client.get_model_metadata("m", headers=B), "404", what="A's model seen by B")
    expect_eq(theirs.message().replace("'m'", "'X'"), absent.message().replace("'absent'", "'X'"), "same text as a model that does not exist")
    expect_server_error(lambda: infer(B, "m", [1.0]), "404", what="B infers on A's model")


def b_uploads_own():
    client.load_model("m", headers=B, config=CONFIG, files={"file:1/model.wasm": WASM})
    expect_array(infer(B, "m", [4.0]), np.array([4.0], dtype=np.float32), "B's m output")
    expect_array(infer(A, "m", [5.0]), np.array([5.0], dtype=np.float32), "A's m still its own")


def a_unloads():
    client.unload_model("m", headers=A)
    expect_server_error(lambda: infer(A, "m", [1.0]), "404", what="A's m after unload")
    expect_array(infer(B, "m", [6.0]), np.array([6.0], dtype=np.float32), "B's m unaffected")


run.case("no token: 401, health open", no_token)
run.case("tenant A uploads with load_model(config, files)", a_uploads)
run.case("tenant A infers", a_infers)
run.case("tenant B cannot see A's model", b_cannot_see)
run.case("tenant B uploads its own m", b_uploads_own)
run.case("tenant A unloads its m; B's stays", a_unloads)
run.finish()
