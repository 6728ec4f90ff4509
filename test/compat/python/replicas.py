"""A tenant's view of a Warden fleet through a load balancer, with NVIDIA's tritonclient: one phase
per run (the vitest side kills and restarts replicas between and during phases).

Phases:
  upload   tenant A uploads a sandboxed identity model (load API with files) through the balancer
  traffic  tenant A infers for --seconds through the balancer, one request at a time; every
           request's outcome and wall time is observed (the vitest side matches failures against
           the moment it killed a replica)
  check    tenant A infers once on the given URL (a replica directly) and gets its input back
  delete   tenant A unloads with delete_files through the balancer
  absent   tenant A's model is gone on the given URL (a replica directly)
  isolated tenant B cannot reach tenant A's model: the same answer as for a model that never existed

Run: replicas.py --url <host:port> --phase <phase> --token-a <t> --token-b <t> [--wasm <path>] [--seconds N]
"""

import json
import time
import urllib.request

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from compat_common import Mismatch, Run, expect_array, expect_eq


def add_args(p):
    p.add_argument("--phase", required=True)
    p.add_argument("--token-a", required=True)
    p.add_argument("--token-b", required=True)
    p.add_argument("--wasm")
    p.add_argument("--seconds", type=float, default=5.0)


run = Run("replicas.py", __doc__, add_args)
a = {"Authorization": f"Bearer {run.args.token_a}"}
b = {"Authorization": f"Bearer {run.args.token_b}"}
MODEL = "fleet_identity"
CONFIG = json.dumps(
    {
        "backend": "wasm",
        "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
        "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
        "response_cache": {"enable": True},
    }
)
X = np.array([1.5, 2.5, 3.5], dtype=np.float32)


def infer(client, headers):
    i = httpclient.InferInput("INPUT0", [3], "FP32")
    i.set_data_from_numpy(X)
    return client.infer(MODEL, [i], headers=headers)


def error_of(fn):
    try:
        fn()
    except InferenceServerException as e:
        return {"status": e.status(), "message": e.message()}
    raise Mismatch("expected an error, got success")


phase = run.args.phase

if phase == "upload":

    @run.case("upload through the balancer")
    def upload():
        wasm = open(run.args.wasm, "rb").read()
        run.client.load_model(MODEL, headers=a, config=CONFIG, files={"file:1/model.wasm": wasm})
        expect_array(infer(run.client, a).as_numpy("OUTPUT0"), X, "OUTPUT0 after upload")

elif phase == "traffic":

    @run.case("traffic through the balancer")
    def traffic():
        outcomes = []
        client = httpclient.InferenceServerClient(url=run.args.url, connection_timeout=5.0, network_timeout=5.0)
        end = time.time() + run.args.seconds
        while time.time() < end:
            t0 = time.time()
            try:
                out = infer(client, a).as_numpy("OUTPUT0")
                ok = out is not None and np.array_equal(out, X)
                outcomes.append({"start": t0, "end": time.time(), "ok": bool(ok), "error": "" if ok else "wrong output"})
            except Exception as e:  # any client or server failure is an outcome, not a crash
                outcomes.append({"start": t0, "end": time.time(), "ok": False, "error": str(e)[:200]})
                client.close()
                client = httpclient.InferenceServerClient(url=run.args.url, connection_timeout=5.0, network_timeout=5.0)
        client.close()
        run.observe("outcomes", outcomes)

elif phase == "check":

    @run.case("the model answers on this replica")
    def check():
        expect_array(infer(run.client, a).as_numpy("OUTPUT0"), X, "OUTPUT0")

elif phase == "delete":

    @run.case("unload with delete_files through the balancer")
    def delete():
        # tritonclient's unload_model sends no parameters; Warden's delete_files is one (README).
        req = urllib.request.Request(
            f"http://{run.args.url}/v2/repository/models/{MODEL}/unload",
            data=json.dumps({"parameters": {"delete_files": True}}).encode(),
            headers={**a, "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=30) as r:
            expect_eq(r.status, 200, "unload status")

elif phase == "absent":

    @run.case("the model is gone on this replica")
    def absent():
        e = error_of(lambda: infer(run.client, a))
        run.observe("error", e)
        expect_eq(e["status"], "404", "status of a deleted model")

elif phase == "isolated":

    @run.case("another tenant sees no such model")
    def isolated():
        theirs = error_of(lambda: infer(run.client, b))
        i = httpclient.InferInput("INPUT0", [3], "FP32")
        i.set_data_from_numpy(X)
        never = error_of(lambda: run.client.infer("never_existed", [i], headers=b))
        run.observe("theirs", theirs)
        expect_eq(theirs["status"], never["status"], "status")
        expect_eq(theirs["message"].replace(MODEL, "M"), never["message"].replace("never_existed", "M"), "message")

else:
    raise SystemExit(f"unknown phase {phase}")

run.finish()
