"""Shared harness for Warden's tritonclient compatibility scripts.

Every script drives a running Warden server with NVIDIA's official Python client
(`tritonclient.http`) and records named *cases*. A case passes when its function returns
without raising; any exception (a failed expectation, an unexpected InferenceServerException,
a client error) fails it with a one-line detail. At exit the script prints exactly one line

    WARDEN_COMPAT_RESULT {"script": ..., "cases": [{"name", "ok", "detail"}], "observed": {...}}

and exits 0 when every case passed, 1 otherwise. `observed` carries raw server answers
(metadata, configs, index, statistics) that the vitest side asserts on as well.
"""

import argparse
import json
import sys
import time
import traceback

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

RESULT_PREFIX = "WARDEN_COMPAT_RESULT "


class Mismatch(AssertionError):
    """An expectation that did not hold; the message says what was expected and what came."""


def expect_eq(got, want, what):
    """Raise Mismatch unless got == want (plain Python values)."""
    if got != want:
        raise Mismatch(f"{what}: expected {want!r}, got {got!r}")


def expect_true(cond, what):
    if not cond:
        raise Mismatch(what)


def expect_array(got, want, what):
    """Exact array equality: same dtype kind, same shape, same elements (no tolerance)."""
    if got is None:
        raise Mismatch(f"{what}: output missing from the response")
    want = np.asarray(want)
    if got.shape != want.shape:
        raise Mismatch(f"{what}: expected shape {list(want.shape)}, got {list(got.shape)}")
    if want.dtype != np.object_ and got.dtype != want.dtype:
        raise Mismatch(f"{what}: expected dtype {want.dtype}, got {got.dtype}")
    if not np.array_equal(got, want):
        bad = np.argwhere(got != want)[:4].tolist()
        raise Mismatch(
            f"{what}: values differ at {bad}: expected {want.flatten()[:6].tolist()}..., "
            f"got {got.flatten()[:6].tolist()}..."
        )


def expect_server_error(fn, status, message=None, contains=None, what="request"):
    """Call fn(); it must raise InferenceServerException with the given HTTP status (string, as
    tritonclient reports it) and either the exact message or a message containing `contains`.
    Returns the exception for further checks."""
    try:
        fn()
    except InferenceServerException as e:
        got_status = e.status()
        got_msg = e.message()
        if got_status != status:
            raise Mismatch(
                f"{what}: expected HTTP {status}, got {got_status} (message {got_msg!r})"
            )
        if message is not None and got_msg != message:
            raise Mismatch(f"{what}: expected message {message!r}, got {got_msg!r}")
        if contains is not None and contains not in (got_msg or ""):
            raise Mismatch(f"{what}: expected message containing {contains!r}, got {got_msg!r}")
        return e
    raise Mismatch(f"{what}: expected an InferenceServerException (HTTP {status}), got success")


def bytes_of(arr):
    """Normalise a BYTES output (bytes from the binary path, str from the JSON path) to bytes."""
    flat = [x if isinstance(x, bytes) else str(x).encode() for x in arr.flatten()]
    return np.array(flat, dtype=np.object_).reshape(arr.shape)


def tenant_args(p):
    """The arguments of the multi-tenant scripts: two tenants' tokens and the identity component they upload."""
    p.add_argument("--token-a", required=True)
    p.add_argument("--token-b", required=True)
    p.add_argument("--wasm", required=True, help="path of an identity component (FP32 [-1] -> FP32 [-1])")


def identity_upload(wasm_path):
    """The config (JSON text) and component bytes of a tenant's identity model, for `load_model(config=, files=)`."""
    with open(wasm_path, "rb") as f:
        wasm = f.read()
    config = json.dumps(
        {
            "backend": "wasm",
            "max_batch_size": 0,
            "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
            "output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]}],
        }
    )
    return config, wasm


class Run:
    """Collects case results and observed server answers for one script run."""

    def __init__(self, script, description, add_args=None):
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--url", required=True, help="host:port of the Warden HTTP endpoint")
        parser.add_argument("--repo", help="path of the model repository on disk")
        parser.add_argument("--models", default="", help="comma-separated model names")
        if add_args is not None:
            add_args(parser)
        self.args = parser.parse_args()
        self.script = script
        self.cases = []
        self.observed = {}
        self.client = httpclient.InferenceServerClient(url=self.args.url, concurrency=8)

    def case(self, name, fn=None):
        """Run one named case; record ok or the failure detail. Never raises.

        Without `fn`, a decorator: `@run.case("name")` over a function runs it as that case where
        it is defined (so cases run in the order the script defines them).
        """
        if fn is None:

            def run_now(f):
                self.case(name, f)
                return f

            return run_now
        try:
            fn()
            self.cases.append({"name": name, "ok": True, "detail": ""})
        except Mismatch as e:
            self.cases.append({"name": name, "ok": False, "detail": str(e)})
        except InferenceServerException as e:
            self.cases.append(
                {
                    "name": name,
                    "ok": False,
                    "detail": f"unexpected server error: HTTP {e.status()}: {e.message()}",
                }
            )
        except Exception as e:  # client-side failure: decoding, connection, ...
            tb = traceback.format_exc(limit=3).strip().splitlines()[-3:]
            self.cases.append(
                {
                    "name": name,
                    "ok": False,
                    "detail": f"{type(e).__name__}: {e} | " + " / ".join(tb),
                }
            )

    def wait_ready(self, model, want, seconds=20):
        """Poll `is_model_ready(model)` until it is `want`; raises AssertionError after `seconds`."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.client.is_model_ready(model) == want:
                return
            time.sleep(0.05)
        raise AssertionError(f"is_model_ready({model!r}) did not become {want} within {seconds}s")

    def observe(self, key, value):
        self.observed[key] = value

    def finish(self):
        """Print the machine-readable result line and exit (0 iff every case passed)."""
        try:
            self.client.close()
        except Exception:
            pass
        ok = all(c["ok"] for c in self.cases) and len(self.cases) > 0
        payload = {"script": self.script, "ok": ok, "cases": self.cases, "observed": self.observed}
        sys.stdout.write(RESULT_PREFIX + json.dumps(payload, default=str) + "\n")
        sys.stdout.flush()
        sys.exit(0 if ok else 1)
