"""Triton's asyncio HTTP client, tritonclient.http.aio (aiohttp), against Warden in explicit mode.

Usage: http_aio.py --url host:port (the server has `simple` loaded and `simple_int8` in its
repository, not loaded)

aiohttp sends `Accept-Encoding: gzip, deflate` on every request, and the client reads bodies with
`auto_decompress=False`: it parses every answer as plain JSON except an infer answer it asked to
be compressed. So every call here also checks that Warden compresses only where Triton does
(infer and generate answers, spec §1.14). Calls: health (live, ready, model ready, an unknown
model not ready), server metadata, model metadata and config, infer (JSON and binary outputs,
gzip and deflate both ways), statistics, repository index, load and unload, error status and
text for an unknown model and a wrong datatype, and the shared-memory status calls.
"""

import asyncio

import numpy as np
import tritonclient.http.aio as aioclient
from tritonclient.utils import InferenceServerException

from compat_common import Mismatch, Run, expect_array, expect_eq, expect_true

run = Run("http_aio.py", __doc__)


def simple_inputs(datatype="INT32", dtype=np.int32):
    a = np.arange(16, dtype=dtype).reshape(1, 16)
    b = np.full((1, 16), 3, dtype=dtype)
    tensors = []
    for name, arr in (("INPUT0", a), ("INPUT1", b)):
        t = aioclient.InferInput(name, list(arr.shape), datatype)
        t.set_data_from_numpy(arr)
        tensors.append(t)
    return a, b, tensors


async def expect_error(coro, status, message, what):
    try:
        await coro
    except InferenceServerException as e:
        expect_eq((e.status(), e.message()), (status, message), what)
        return
    raise Mismatch(f"{what}: expected HTTP {status} {message!r}, got success")


async def main():
    async with aioclient.InferenceServerClient(url=run.args.url) as c:

        async def health():
            expect_eq(await c.is_server_live(), True, "is_server_live")
            expect_eq(await c.is_server_ready(), True, "is_server_ready")
            expect_eq(await c.is_model_ready("simple"), True, "is_model_ready(simple)")
            expect_eq(await c.is_model_ready("no_such_model"), False, "is_model_ready(no_such_model)")

        async def metadata():
            md = await c.get_server_metadata()
            run.observe("server_metadata", md)
            expect_eq(md["name"], "triton", "server name")
            mmd = await c.get_model_metadata("simple")
            run.observe("model_metadata", mmd)
            expect_eq([i["shape"] for i in mmd["inputs"]], [[-1, 16], [-1, 16]], "simple input shapes")
            cfg = await c.get_model_config("simple")
            run.observe("model_config", cfg)
            expect_eq((cfg["name"], cfg["max_batch_size"]), ("simple", 8), "simple config")

        async def infer(binary, request_compression=None, response_compression=None):
            a, b, tensors = simple_inputs()
            outputs = [aioclient.InferRequestedOutput(n, binary_data=binary) for n in ("OUTPUT0", "OUTPUT1")]
            result = await c.infer(
                "simple",
                tensors,
                outputs=outputs,
                request_id="aio-1",
                request_compression_algorithm=request_compression,
                response_compression_algorithm=response_compression,
            )
            expect_eq(result.get_response()["id"], "aio-1", "request id echoed")
            expect_array(result.as_numpy("OUTPUT0"), a + b, "OUTPUT0")
            expect_array(result.as_numpy("OUTPUT1"), a - b, "OUTPUT1")

        async def statistics():
            await infer(True)
            stats = await c.get_inference_statistics("simple")
            run.observe("statistics", stats)
            s = stats["model_stats"][0]
            expect_eq((s["name"], s["version"]), ("simple", "1"), "statistics entry")
            expect_true(s["inference_count"] >= 1, f"inference_count counted: {s['inference_count']}")
            expect_true(s["inference_stats"]["success"]["count"] >= 1, "success counted")

        async def index():
            idx = await c.get_model_repository_index()
            run.observe("index", idx)
            by_name = {e["name"]: e for e in idx}
            expect_eq(by_name["simple"].get("state"), "READY", "simple READY in the index")
            expect_true("simple_int8" in by_name, "simple_int8 listed (in the repository)")

        async def load_unload():
            await c.load_model("simple_int8")
            expect_eq(await c.is_model_ready("simple_int8"), True, "simple_int8 ready after load")
            await c.unload_model("simple_int8")
            for _ in range(100):
                if not await c.is_model_ready("simple_int8"):
                    break
                await asyncio.sleep(0.05)
            expect_eq(await c.is_model_ready("simple_int8"), False, "simple_int8 not ready after unload")

        async def errors():
            _, _, tensors = simple_inputs()
            await expect_error(
                c.infer("no_such_model", tensors),
                "404",
                "Request for unknown model: 'no_such_model' is not found",
                "infer on an unknown model",
            )
            _, _, fp32 = simple_inputs("FP32", np.float32)
            await expect_error(
                c.infer("simple", fp32),
                "400",
                "[request id: <id_unknown>] inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
                "FP32 inputs to simple",
            )
            await expect_error(
                c.get_model_metadata("no_such_model"),
                "404",
                "Request for unknown model: 'no_such_model' is not found",
                "metadata of an unknown model",
            )

        async def shm_status():
            # No regions registered: both status calls list none (CUDA as Triton built without GPUs).
            expect_eq(await c.get_system_shared_memory_status(), [], "system shared memory status")
            expect_eq(await c.get_cuda_shared_memory_status(), [], "CUDA shared memory status")

        cases = [
            ("health", health),
            ("server metadata, model metadata and config", metadata),
            ("infer, JSON outputs", lambda: infer(False)),
            ("infer, binary outputs", lambda: infer(True)),
            ("infer, gzip request and response", lambda: infer(True, "gzip", "gzip")),
            ("infer, deflate request and response", lambda: infer(False, "deflate", "deflate")),
            ("statistics", statistics),
            ("repository index", index),
            ("load and unload", load_unload),
            ("errors: status and text", errors),
            ("shared memory status calls", shm_status),
        ]
        for name, fn in cases:
            # Run.case takes a plain function: await the case here, let Run.case record its outcome.
            try:
                await fn()
                failure = None
            except Exception as e:
                failure = e

            def outcome(failure=failure):
                if failure is not None:
                    raise failure

            run.case(name, outcome)


asyncio.run(main())
run.finish()
