"""A sequence model inside an ensemble, through tritonclient.http and tritonclient.grpc.

Usage: sequence_ensemble.py --url host:port --grpc-url host:port --models <ensemble>

The ensemble (not batching, INPUT / OUTPUT INT32 [1]) has one step, the default repository's
`simple_dyna_sequence` (batching, oldest strategy, CORRID control): OUTPUT = READY * (INPUT +
START + END * CORRID). Triton forwards the ensemble request's correlation ID and flags to every
step and adds / strips the batch-1 dimension between the ensemble and the step (core
ensemble_scheduler.cc), so Triton's sequence client example gives its usual results through the
ensemble: the first value + 1, then each value, the correlation ID added on the last request.
Two sequences interleaved, one with an integer id and one with a decimal string id.
"""

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from compat_common import Run, expect_eq

run = Run("sequence_ensemble.py", __doc__, lambda p: p.add_argument("--grpc-url", required=True))
g = grpcclient.InferenceServerClient(url=run.args.grpc_url)
E = run.args.models
VALUES = [11, 7, 5, 3, 2, 0, 1]


def sender(lib, client):
    def send(sequence_id, value, start, end):
        data = np.full(shape=[1], fill_value=value, dtype=np.int32)
        t = lib.InferInput("INPUT", [1], "INT32")
        t.set_data_from_numpy(data)
        result = client.infer(
            model_name=E,
            inputs=[t],
            outputs=[lib.InferRequestedOutput("OUTPUT")],
            sequence_id=sequence_id,
            sequence_start=start,
            sequence_end=end,
        )
        out = result.as_numpy("OUTPUT")
        expect_eq(list(out.shape), [1], f"{E} seq {sequence_id} OUTPUT shape")
        return int(out[0])

    return send


def interleaved(send, id0, id1):
    seqs = [(id0, [0] + VALUES), (id1, [100] + [-v for v in VALUES])]
    n = len(seqs[0][1])
    results = [[], []]
    for i in range(n):
        for k, (sid, values) in enumerate(seqs):
            results[k].append(send(sid, values[i], i == 0, i == n - 1))
    return results


def expected(first, values, corrid):
    out = [first + 1] + list(values)
    out[-1] += corrid
    return out


def case(lib, client, id0, id1, key):
    def run_case():
        r0, r1 = interleaved(sender(lib, client), id0, id1)
        run.observe(key, [r0, r1])
        expect_eq(r0, expected(0, VALUES, int(id0)), f"sequence {id0!r}")
        expect_eq(r1, expected(100, [-v for v in VALUES], int(id1)), f"sequence {id1!r}")

    return run_case


run.case("http: two interleaved sequences through the ensemble", case(httpclient, run.client, 1000, "1001", "http"))
run.case("grpc: two interleaved sequences through the ensemble", case(grpcclient, g, 2000, "2001", "grpc"))
g.close()
run.finish()
