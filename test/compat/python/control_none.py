"""Model control mode NONE (spec §5.8) on the default repository, through tritonclient.http.

Usage: control_none.py --url host:port --models simple,... --unavailable simple_sequence,...

The listed models are READY in the index and infer exactly; the unavailable ones are listed
UNAVAILABLE with a reason and refuse inference; is_server_ready() follows Triton's strict
readiness (true iff every model in the index is READY); load / unload are refused with 503.
"""

import numpy as np
import tritonclient.http as httpclient

import example_models as ex
from compat_common import Run, bytes_of, expect_array, expect_eq, expect_server_error, expect_true


def _args(p):
    p.add_argument("--unavailable", default="", help="models that must be UNAVAILABLE")


run = Run("control_none.py", __doc__, _args)
client = run.client
models = [m for m in run.args.models.split(",") if m]
unavailable = [m for m in run.args.unavailable.split(",") if m]
REFUSED = "explicit model load / unload is not allowed if polling is enabled"


@run.case("index: READY and UNAVAILABLE models")
def index():
    idx = client.get_model_repository_index()
    run.observe("index", idx)
    for m in models:
        found = [e for e in idx if e.get("name") == m]
        expect_eq(found, [{"name": m, "version": "1", "state": "READY"}], f"index entry of {m}")
    for m in unavailable:
        found = [e for e in idx if e.get("name") == m]
        expect_eq(len(found), 1, f"index entries of {m}")
        e = found[0]
        expect_eq(e.get("state"), "UNAVAILABLE", f"{m} state")
        expect_true(isinstance(e.get("reason"), str) and e["reason"], f"{m} has no reason: {e!r}")


@run.case("strict readiness follows the index")
def strict_readiness():
    idx = client.get_model_repository_index()
    all_ready = all(e.get("state") == "READY" for e in idx)
    expect_eq(client.is_server_ready(), all_ready, f"is_server_ready() with index states {[(e.get('name'), e.get('state')) for e in idx]}")


@run.case("example models infer exactly")
def infer_each():
    for m in models:
        batch = 3 if ex.MAX_BATCH[m] > 0 else None
        inputs, expected = ex.make(m, batch, 11)
        result = client.infer(m, ex.input_tensors(httpclient, m, inputs))
        for n in ("OUTPUT0", "OUTPUT1"):
            got = result.as_numpy(n)
            if ex.ALL[m] == "BYTES":
                got = bytes_of(got)
            expect_array(got, expected[n], f"{m} {n}")


@run.case("unavailable models refuse inference")
def unavailable_refuse():
    for m in unavailable:
        expect_eq(client.is_model_ready(m), False, f"is_model_ready({m!r})")
        t = httpclient.InferInput("INPUT", [1, 1], "INT32")
        t.set_data_from_numpy(np.ones((1, 1), dtype=np.int32))
        expect_server_error(
            lambda: client.infer(m, [t], sequence_id=1, sequence_start=True),
            "404",
            message=f"Request for unknown model: '{m}' has no available versions",
            what=f"infer on unavailable {m}",
        )


@run.case("load / unload refused")
def load_unload_refused():
    expect_server_error(lambda: client.load_model("simple"), "503", message=REFUSED, what="load in mode none")
    expect_server_error(lambda: client.unload_model("simple"), "503", message=REFUSED, what="unload in mode none")
    expect_eq(client.is_model_ready("simple"), True, "simple still ready after the refused unload")


run.finish()
