"""{{name}}: a tokenizer (src/tokenize_text.py) as a sandboxed Warden backend.

componentize-py looks the exported resources up in the module named after the interface:
`backend` holds `Model` and `Instance` (wit/backend.wit). TEXT is one BYTES element (UTF-8);
TOKEN_IDS the INT64 ids of its tokens. `vocab_size` (default 30522) and `lowercase` (default
"true") come from the model configuration's parameters.
"""

import json
import struct
from array import array

from componentize_py_types import Err, Ok
from wit_world.exports import backend
from wit_world.imports import host
from wit_world.imports.types import DataType, Error, ErrorCode, Response, Tensor

from tokenize_text import tokenize


def fail(code: ErrorCode, message: str) -> Err:
    return Err(Error(code, message))


def parameter(config: dict, key: str, default: str) -> str:
    return config.get("parameters", {}).get(key, {}).get("string_value", default)


def bytes_elements(data: bytes) -> list[bytes]:
    """The elements of a BYTES tensor: each a 4-byte little-endian length, then the bytes."""
    out, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("BYTES data ends inside an element's length")
        (n,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if pos + n > len(data):
            raise ValueError("BYTES data ends inside an element")
        out.append(data[pos : pos + n])
        pos += n
    return out


class Model(backend.Model):
    def __init__(self, vocab_size: int, lowercase: bool):
        self.vocab_size = vocab_size
        self.lowercase = lowercase

    @classmethod
    def create(cls, context: backend.ModelContext) -> "Model":
        """Reads and checks the configuration once, when the model loads."""
        config = json.loads(context.config)
        text = parameter(config, "vocab_size", "30522")
        if not text.isdigit() or int(text) < 2:
            raise fail(ErrorCode.INVALID_ARG, f"model '{context.name}': parameter vocab_size must be an integer >= 2, got '{text}'")
        lowercase = parameter(config, "lowercase", "true").lower() != "false"
        host.log(host.LogLevel.INFO, f"{context.name}: vocab_size {text}, lowercase {lowercase}")
        return cls(int(text), lowercase)


class Instance(backend.Instance):
    def __init__(self, model: Model):
        self.model = model

    @classmethod
    def create(cls, model: Model, context: backend.InstanceContext) -> "Instance":
        return cls(model)

    def execute(self, requests):
        """One `Ok(response)` or `Err(error)` per request, in order: a request's error never fails the others."""
        results = []
        for req in requests:
            try:
                results.append(Ok(self.one(req)))
            except ValueError as e:
                results.append(fail(ErrorCode.INVALID_ARG, str(e)))
        return results

    def one(self, req) -> Response:
        text = next((t for t in req.inputs if t.name == "TEXT"), None)
        if text is None or text.datatype != DataType.BYTES:
            raise ValueError("input TEXT (BYTES) is missing")
        elements = bytes_elements(text.data)
        if len(elements) != 1:
            raise ValueError(f"TEXT must hold one string, got {len(elements)}")
        ids = array("q", tokenize(elements[0].decode("utf-8", errors="replace"), self.model.vocab_size, self.model.lowercase))
        outputs = [Tensor("TOKEN_IDS", DataType.INT64, [len(ids)], ids.tobytes())]
        return Response([o for o in outputs if o.name in req.requested_outputs], [])
