"""Multi-tenant mode through tritonclient.http: the client unchanged, only an Authorization header.

Usage: tenancy.py --url host:port --token-a <token> --token-b <token> --wasm <identity component>

Tenant A uploads a sandboxed model with Triton's own load API (`load_model(config=..., files=...)`),
infers on it; tenant B cannot see it (404 with the text of a model that does not exist), uploads
its own model of the same name; a request without a token gets 401.
"""

import numpy as np
import tritonclient.http as httpclient

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true, identity_upload, tenant_args


run = Run("tenancy.py", __doc__, tenant_args)
client = run.client
A = {"Authorization": f"Bearer {run.args.token_a}"}
B = {"Authorization": f"Bearer {run.args.token_b}"}
CONFIG, WASM = identity_upload(run.args.wasm)


def infer(headers, model, values):
    inp = httpclient.InferInput("INPUT0", [len(values)], "FP32")
    inp.set_data_from_numpy(np.array(values, dtype=np.float32))
    return client.infer(model, [inp], headers=headers).as_numpy("OUTPUT0")


@run.case("no token: 401, health open")
def no_token():
    expect_true(client.is_server_live(), "health needs no token")
    expect_server_error(lambda: client.get_model_metadata("m"), "401", contains="authentication required", what="metadata without a token")


@run.case("tenant A uploads with load_model(config, files)")
def a_uploads():
    client.load_model("m", headers=A, config=CONFIG, files={"file:1/model.wasm": WASM})
    expect_true(client.is_model_ready("m", headers=A), "A's m ready")


@run.case("tenant A infers")
def a_infers():
    expect_array(infer(A, "m", [1.5, -2.0, 3.0]), np.array([1.5, -2.0, 3.0], dtype=np.float32), "A's m output")


@run.case("tenant B cannot see A's model")
def b_cannot_see():
    absent = expect_server_error(lambda: client.get_model_metadata("absent", headers=B), "404", what="absent model")
    theirs = expect_server_error(lambda: client.get_model_metadata("m", headers=B), "404", what="A's model seen by B")
    expect_eq(theirs.message().replace("'m'", "'X'"), absent.message().replace("'absent'", "'X'"), "same text as a model that does not exist")
    expect_server_error(lambda: infer(B, "m", [1.0]), "404", what="B infers on A's model")


@run.case("tenant B uploads its own m")
def b_uploads_own():
    client.load_model("m", headers=B, config=CONFIG, files={"file:1/model.wasm": WASM})
    expect_array(infer(B, "m", [4.0]), np.array([4.0], dtype=np.float32), "B's m output")
    expect_array(infer(A, "m", [5.0]), np.array([5.0], dtype=np.float32), "A's m still its own")


@run.case("tenant A unloads its m; B's stays")
def a_unloads():
    client.unload_model("m", headers=A)
    expect_server_error(lambda: infer(A, "m", [1.0]), "404", what="A's m after unload")
    expect_array(infer(B, "m", [6.0]), np.array([6.0], dtype=np.float32), "B's m unaffected")


run.finish()
