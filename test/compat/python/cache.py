"""The response cache seen through tritonclient.grpc: a repeated request to a model with
`response_cache { enable: true }` is a hit in the statistics extension (cache_hit / cache_miss),
and is not an inference or an execution.

Run: cache.py --url <http host:port> --grpc-url <grpc host:port> --models simple_cached
"""

import numpy as np
import tritonclient.grpc as grpcclient

from compat_common import Run, expect_array, expect_eq

run = Run("cache.py", __doc__, lambda p: p.add_argument("--grpc-url", required=True))
g = grpcclient.InferenceServerClient(url=run.args.grpc_url)
model = run.args.models
A = np.arange(16, dtype=np.int32).reshape(1, 16)
B = np.full((1, 16), 9, dtype=np.int32)


@run.case("cache hits visible in statistics")
def hits():
    for _ in range(3):
        i0 = grpcclient.InferInput("INPUT0", [1, 16], "INT32")
        i0.set_data_from_numpy(A)
        i1 = grpcclient.InferInput("INPUT1", [1, 16], "INT32")
        i1.set_data_from_numpy(B)
        r = g.infer(model, [i0, i1])
        expect_array(r.as_numpy("OUTPUT0"), A + B, "OUTPUT0 (computed or cached)")
    s = g.get_inference_statistics(model, as_json=True)["model_stats"][0]
    run.observe("statistics", s)
    st = s["inference_stats"]
    expect_eq(int(st["cache_hit"]["count"]), 2, "cache_hit.count")
    expect_eq(int(st["cache_miss"]["count"]), 1, "cache_miss.count")
    expect_eq(int(st["success"]["count"]), 3, "success.count")
    expect_eq(int(s["inference_count"]), 1, "inference_count excludes hits")
    expect_eq(int(s["execution_count"]), 1, "execution_count excludes hits")


g.close()
run.finish()
