"""System shared memory with tritonclient's own utilities (`tritonclient.utils.shared_memory`)
over HTTP and gRPC: register, status, inference with inputs read from and outputs written to the
regions (offsets included), Triton's errors for unknown regions and bad bounds, unregister.

Run: shm.py --url <http host:port> --grpc-url <grpc host:port>
"""

import os

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm

from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true

run = Run("shm.py", __doc__, lambda p: p.add_argument("--grpc-url", required=True))
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 4, dtype=np.int32)
TAG = str(os.getpid())


def over(proto):
    mod = httpclient if proto == "http" else grpcclient
    client = httpclient.InferenceServerClient(run.args.url) if proto == "http" else grpcclient.InferenceServerClient(run.args.grpc_url)
    # status codes as each client reports them
    not_found = "404" if proto == "http" else "StatusCode.NOT_FOUND"
    invalid = "400" if proto == "http" else "StatusCode.INVALID_ARGUMENT"

    def fn():
        client.unregister_system_shared_memory()
        ikey, okey = f"/in_{proto}_{TAG}", f"/out_{proto}_{TAG}"
        ih = shm.create_shared_memory_region(f"in_{proto}", ikey, 128)
        oh = shm.create_shared_memory_region(f"out_{proto}", okey, 128 + 8)
        try:
            shm.set_shared_memory_region(ih, [A])
            shm.set_shared_memory_region(ih, [B], offset=64)
            client.register_system_shared_memory("input_data", ikey, 128)
            client.register_system_shared_memory("output_data", okey, 128, offset=8)
            status = client.get_system_shared_memory_status(as_json=True) if proto == "grpc" else client.get_system_shared_memory_status()
            run.observe(f"status:{proto}", status)
            names = sorted(status["regions"].keys()) if proto == "grpc" else sorted(r["name"] for r in status)
            expect_eq(names, ["input_data", "output_data"], "registered regions")

            inputs = [mod.InferInput("INPUT0", [1, 16], "INT32"), mod.InferInput("INPUT1", [1, 16], "INT32")]
            inputs[0].set_shared_memory("input_data", 64)
            inputs[1].set_shared_memory("input_data", 64, offset=64)
            outputs = [mod.InferRequestedOutput("OUTPUT0"), mod.InferRequestedOutput("OUTPUT1")]
            outputs[0].set_shared_memory("output_data", 64)
            outputs[1].set_shared_memory("output_data", 64, offset=64)
            result = client.infer("simple", inputs, outputs=outputs)
            out0 = result.get_output("OUTPUT0")
            expect_true(out0 is not None, "OUTPUT0 listed in the response")
            # the region starts 8 bytes into the object
            got0 = shm.get_contents_as_numpy(oh, np.int32, [1, 16], offset=8)
            got1 = shm.get_contents_as_numpy(oh, np.int32, [1, 16], offset=8 + 64)
            expect_array(got0, A + B, "OUTPUT0 read from shared memory")
            expect_array(got1, A - B, "OUTPUT1 read from shared memory")

            # errors: unknown region, out of bounds, unknown region status
            bad = [mod.InferInput("INPUT0", [1, 16], "INT32"), mod.InferInput("INPUT1", [1, 16], "INT32")]
            bad[0].set_shared_memory("no_such_region", 64)
            bad[1].set_shared_memory("input_data", 64)
            expect_server_error(lambda: client.infer("simple", bad), not_found, contains="Unable to find shared memory region: 'no_such_region'")
            bad[0].set_shared_memory("input_data", 64, offset=100)
            expect_server_error(lambda: client.infer("simple", bad), invalid, contains="Invalid offset + byte size for shared memory region: 'input_data'")
            expect_server_error(lambda: client.get_system_shared_memory_status("nope"), not_found, contains="Unable to find system shared memory region: 'nope'")
            expect_server_error(lambda: client.register_system_shared_memory("input_data", ikey, 128), "400" if proto == "http" else "StatusCode.ALREADY_EXISTS", what="register twice")
            expect_server_error(lambda: client.register_system_shared_memory("evil", "/../../etc/passwd", 8), invalid, what="path key")
            expect_server_error(lambda: client.register_system_shared_memory("big", ikey, 1 << 20), invalid, what="region larger than the object")
            client.unregister_system_shared_memory("input_data")
            names = sorted(client.get_system_shared_memory_status(as_json=True)["regions"].keys()) if proto == "grpc" else sorted(r["name"] for r in client.get_system_shared_memory_status())
            expect_eq(names, ["output_data"], "after unregistering input_data")
            client.unregister_system_shared_memory()
            # a missing object: Triton's INTERNAL; Triton's Python-backend prefix is reserved
            expect_server_error(lambda: client.register_system_shared_memory("m", f"/no_such_{TAG}", 8), "500" if proto == "http" else "StatusCode.INTERNAL", contains=f"Unable to open shared memory region: '/no_such_{TAG}'")
            expect_server_error(lambda: client.register_system_shared_memory("p", "/triton_python_backend_shm_region_1", 8), invalid, contains="reserved prefix 'triton_python_backend_shm_region_'")
            # the clean-up calls of Triton's CUDA shm examples, on a server without GPUs (as Triton built without GPUs)
            client.unregister_cuda_shared_memory()
            client.unregister_cuda_shared_memory("cuda_region")
            cuda = client.get_cuda_shared_memory_status(as_json=True) if proto == "grpc" else client.get_cuda_shared_memory_status()
            expect_eq(cuda, {} if proto == "grpc" else [], "CUDA shm status: no regions")
            expect_server_error(lambda: client.register_cuda_shared_memory("cuda_region", "AA==" if proto == "http" else b"\0" * 64, 0, 64), invalid, contains="GPUs not supported")
        finally:
            shm.destroy_shared_memory_region(ih)
            shm.destroy_shared_memory_region(oh)
            client.close()

    return fn


run.case("system shared memory over HTTP", over("http"))
run.case("system shared memory over gRPC", over("grpc"))
run.finish()
