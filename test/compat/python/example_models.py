"""Inputs and exact expected outputs for Triton's example ONNX models.

Each model computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1:

| model        | datatype | config dims | max_batch_size | arithmetic                       |
|--------------|----------|-------------|----------------|----------------------------------|
| simple       | INT32    | [16]        | 8              | int32                            |
| simple_string| BYTES    | [16]        | 8              | decimal strings, cast to int32   |
| simple_int8  | INT8     | [16]        | 8              | int32, cast back to int8 (wraps) |
| addsub_onnx  | FP32     | [16]        | 0              | IEEE float32                     |

`make(model, batch)` returns (inputs, expected) where both map tensor name -> numpy array with the
request shape ([batch, 16] for batching models, [16] for addsub_onnx, which takes batch=None).
Values differ per batch row so a server mixing rows up is caught.
"""

import numpy as np

BATCHING = {"simple": "INT32", "simple_string": "BYTES", "simple_int8": "INT8"}
NON_BATCHING = {"addsub_onnx": "FP32"}
ALL = {**BATCHING, **NON_BATCHING}
MAX_BATCH = {"simple": 8, "simple_string": 8, "simple_int8": 8, "addsub_onnx": 0}


def input_tensors(lib, model, inputs, binary=None):
    """INPUT0 and INPUT1 of `inputs` (from `make`) as `lib.InferInput`s of example `model`, where `lib`
    is tritonclient.http or tritonclient.http.aio; `binary` sets `binary_data` (None: the client's default)."""
    tensors = []
    for name in ("INPUT0", "INPUT1"):
        t = lib.InferInput(name, list(inputs[name].shape), ALL[model])
        if binary is None:
            t.set_data_from_numpy(inputs[name])
        else:
            t.set_data_from_numpy(inputs[name], binary_data=binary)
        tensors.append(t)
    return tensors


def _int_pair(n, seed):
    base = np.arange(n, dtype=np.int64)
    in0 = (base * 7919 + seed * 131) % 200001 - 100000
    in1 = (base * 104729 + seed * 17) % 20001 - 10000
    return in0, in1


def make(model, batch, seed=0):
    """Inputs and expected outputs for one request (see module doc)."""
    if model == "addsub_onnx":
        assert batch is None
        rng = np.random.default_rng(1234 + seed)
        in0 = (rng.standard_normal(16) * 100).astype(np.float32)
        in1 = (rng.standard_normal(16) * 0.01).astype(np.float32)
        in0[0] = np.float32(0.1)  # not exactly representable: exercises JSON float round-trips
        in1[0] = np.float32(0.2)
        return (
            {"INPUT0": in0, "INPUT1": in1},
            {"OUTPUT0": in0 + in1, "OUTPUT1": in0 - in1},
        )
    n = batch * 16
    shape = (batch, 16)
    if model == "simple":
        a, b = _int_pair(n, seed)
        in0, in1 = a.astype(np.int32).reshape(shape), b.astype(np.int32).reshape(shape)
        return {"INPUT0": in0, "INPUT1": in1}, {"OUTPUT0": in0 + in1, "OUTPUT1": in0 - in1}
    if model == "simple_int8":
        base = np.arange(n, dtype=np.int64) + seed
        a = ((base * 37 + 100) % 256 - 128).astype(np.int8).reshape(shape)
        b = ((base * 101 + 60) % 256 - 128).astype(np.int8).reshape(shape)
        wide0 = a.astype(np.int32) + b.astype(np.int32)
        wide1 = a.astype(np.int32) - b.astype(np.int32)
        # int32 -> int8 narrowing wraps modulo 256, as the model's Cast does
        out0 = ((wide0 + 128) % 256 - 128).astype(np.int8)
        out1 = ((wide1 + 128) % 256 - 128).astype(np.int8)
        assert (wide0 != out0).any() or (wide1 != out1).any(), "inputs must exercise wraparound"
        return {"INPUT0": a, "INPUT1": b}, {"OUTPUT0": out0, "OUTPUT1": out1}
    if model == "simple_string":
        a, b = _int_pair(n, seed)

        def enc(v):
            return np.array([str(int(x)).encode() for x in v], dtype=np.object_).reshape(shape)

        return (
            {"INPUT0": enc(a), "INPUT1": enc(b)},
            {"OUTPUT0": enc(a + b), "OUTPUT1": enc(a - b)},
        )
    raise ValueError(f"unknown example model {model}")


def byte_size(arr, datatype):
    """Bytes the binary extension carries for this tensor (BYTES: 4-byte length + data each)."""
    if datatype == "BYTES":
        return sum(4 + len(x) for x in arr.flatten())
    return arr.nbytes
