"""Triton's sequence client example through tritonclient.http (spec §3.7, §5.6).

Usage: sequence.py --url host:port

What `simple_http_sequence_sync_infer_client.py` does: two sequences of values, sent with
`client.infer(..., sequence_id=, sequence_start=, sequence_end=)`, on `simple_sequence` (direct)
and, as with its `--dyna` flag, `simple_dyna_sequence` (oldest, CORRID control). The ONNX models
compute OUTPUT = READY * (INPUT + START) (+ END * CORRID for the dyna model), so the expected
results are Triton's: the first value + 1, then each value; the dyna model adds the correlation id
on the last request. String sequence ids too, interleaved sequences, and Triton's errors.
"""

import uuid

import numpy as np
import tritonclient.http as httpclient

from compat_common import Run, expect_eq, expect_server_error

run = Run("sequence.py", __doc__)
client = run.client
VALUES = [11, 7, 5, 3, 2, 0, 1]


def send(model, sequence_id, value, start, end):
    data = np.full(shape=[1, 1], fill_value=value, dtype=np.int32)
    t = httpclient.InferInput("INPUT", list(data.shape), "INT32")
    t.set_data_from_numpy(data)
    result = client.infer(
        model_name=model,
        inputs=[t],
        outputs=[httpclient.InferRequestedOutput("OUTPUT")],
        sequence_id=sequence_id,
        sequence_start=start,
        sequence_end=end,
    )
    out = result.as_numpy("OUTPUT")
    expect_eq(list(out.shape), [1, 1], f"{model} seq {sequence_id} OUTPUT shape")
    return int(out[0][0])


def sync_send(model, values, sequence_id):
    """The example's sync_send: one sequence, request after request."""
    return [send(model, sequence_id, v, i == 0, i == len(values) - 1) for i, v in enumerate(values)]


def interleaved(model, seqs):
    """Several sequences step by step: request i of every sequence, then request i + 1."""
    n = len(seqs[0][1])
    results = [[] for _ in seqs]
    for i in range(n):
        for k, (sid, values) in enumerate(seqs):
            results[k].append(send(model, sid, values[i], i == 0, i == n - 1))
    return results


def expected(first, values, corrid=None):
    out = [first + 1] + list(values)
    if corrid is not None:
        out[-1] += corrid
    return out


NEG = [-v for v in VALUES]


def example(model, dyna):
    id0, id1 = 1000, 1001
    # Triton's example: a decimal string id for the dyna model (its CORRID is an integer), a UUID otherwise.
    sid = "1002" if dyna else str(uuid.uuid4())
    r0 = sync_send(model, [0] + VALUES, id0)
    r1 = sync_send(model, [100] + NEG, id1)
    r2 = sync_send(model, [20] + NEG, sid)
    run.observe(f"{model}:results", [r0, r1, r2])
    expect_eq(r0, expected(0, VALUES, id0 if dyna else None), f"{model} sequence {id0}")
    expect_eq(r1, expected(100, NEG, id1 if dyna else None), f"{model} sequence {id1}")
    expect_eq(r2, expected(20, NEG, int(sid) if dyna else None), f"{model} sequence {sid!r}")


def interleaved_case(model, dyna):
    seqs = [(2000, [0] + VALUES), ("2001", [100] + NEG), (2002, [5] + VALUES)]
    got = interleaved(model, seqs)
    for (sid, values), r in zip(seqs, got):
        corrid = int(sid) if dyna else None
        expect_eq(r, expected(values[0], values[1:], corrid), f"{model} interleaved sequence {sid!r}")


def errors():
    data = np.ones((1, 1), dtype=np.int32)
    t = httpclient.InferInput("INPUT", [1, 1], "INT32")
    t.set_data_from_numpy(data)
    expect_server_error(
        lambda: client.infer("simple_sequence", [t]),
        "400",
        message="inference request to model 'simple_sequence' must specify a non-zero or non-empty correlation ID",
        what="no sequence id",
    )
    expect_server_error(
        lambda: client.infer("simple_sequence", [t], sequence_id=31337),
        "400",
        message="inference request for sequence 31337 to model 'simple_sequence' must specify the START flag on the first request of the sequence",
        what="no START for an unknown sequence",
    )
    a = httpclient.InferInput("INPUT0", [1, 16], "INT32")
    a.set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    b = httpclient.InferInput("INPUT1", [1, 16], "INT32")
    b.set_data_from_numpy(np.ones((1, 16), dtype=np.int32))
    # Triton accepts sequence parameters on a model without a sequence batcher and ignores them.
    plain = client.infer("simple", [a, b], sequence_id=5, sequence_start=True, sequence_end=True)
    expect_eq(plain.as_numpy("OUTPUT0").tolist(), [[2] * 16], "sequence parameters on a model without a sequence batcher")
    # The models still serve.
    expect_eq(send("simple_sequence", 31337, 4, True, True), 5, "simple_sequence after the errors")


run.case("simple_sequence: Triton's sequence client example", lambda: example("simple_sequence", False))
run.case("simple_dyna_sequence: Triton's sequence client example (--dyna)", lambda: example("simple_dyna_sequence", True))
run.case("simple_sequence: interleaved sequences, integer and string ids", lambda: interleaved_case("simple_sequence", False))
run.case("simple_dyna_sequence: interleaved sequences, integer and string ids", lambda: interleaved_case("simple_dyna_sequence", True))
run.case("sequence errors", errors)
run.finish()
