"""Warden's ``triton_python_backend_utils`` (import as ``pb_utils``): the surface of Triton's Python
backend utilities (spec section 7.2) that ``TritonPythonModel`` implementations use, written for
Warden's stub (``warden_python_stub.py``). Not copied from Triton: the names and semantics follow the
spec; the transport (a socket to Warden and POSIX shared memory files in /dev/shm) is Warden's own.

Tensors are numpy arrays: BYTES tensors are ``np.object_`` arrays of ``bytes``; BF16 tensors keep
their raw 16-bit words (numpy has no bfloat16) and are reached through ``to_dlpack`` /
``from_dlpack`` (torch), as with Triton.
"""
import json
import sys
import threading

import numpy as np

# --- constants (TRITONSERVER_* values, spec section 7.2) -------------------------------------------
TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
TRITONSERVER_MEMORY_CPU = 0
TRITONSERVER_MEMORY_CPU_PINNED = 1
TRITONSERVER_MEMORY_GPU = 2

# TRITONSERVER_DataType enum values and names.
TYPE_INVALID, TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64 = 0, 1, 2, 3, 4, 5
TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64 = 6, 7, 8, 9
TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_STRING, TYPE_BF16 = 10, 11, 12, 13, 14

_NAME_OF = {
    TYPE_BOOL: "BOOL", TYPE_UINT8: "UINT8", TYPE_UINT16: "UINT16", TYPE_UINT32: "UINT32",
    TYPE_UINT64: "UINT64", TYPE_INT8: "INT8", TYPE_INT16: "INT16", TYPE_INT32: "INT32",
    TYPE_INT64: "INT64", TYPE_FP16: "FP16", TYPE_FP32: "FP32", TYPE_FP64: "FP64",
    TYPE_STRING: "BYTES", TYPE_BF16: "BF16",
}
_ENUM_OF = {v: k for k, v in _NAME_OF.items()}
_NUMPY_OF = {
    TYPE_BOOL: np.bool_, TYPE_UINT8: np.uint8, TYPE_UINT16: np.uint16, TYPE_UINT32: np.uint32,
    TYPE_UINT64: np.uint64, TYPE_INT8: np.int8, TYPE_INT16: np.int16, TYPE_INT32: np.int32,
    TYPE_INT64: np.int64, TYPE_FP16: np.float16, TYPE_FP32: np.float32, TYPE_FP64: np.float64,
    TYPE_STRING: np.object_,
}

# The stub's connection to Warden (set by warden_python_stub.py).
_runtime = None


# --- errors ----------------------------------------------------------------------------------------
class TritonError(Exception):
    """An error with one of Triton's codes; what a response carries and BLS responses report."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    _NAMES = ["UNKNOWN", "INTERNAL", "NOT_FOUND", "INVALID_ARG", "UNAVAILABLE", "UNSUPPORTED", "ALREADY_EXISTS", "CANCELLED"]

    def __init__(self, message, code=INTERNAL):
        super().__init__(message)
        self._message = str(message)
        self._code = int(code) if 0 <= int(code) < len(self._NAMES) else TritonError.INTERNAL

    def message(self):
        return self._message

    def code(self):
        return self._code

    def _wire(self):
        return {"code": self._NAMES[self._code], "message": self._message}

    @classmethod
    def _from_wire(cls, w):
        name = w.get("code", "INTERNAL")
        code = cls._NAMES.index(name) if name in cls._NAMES else cls.INTERNAL
        return cls(w.get("message", ""), code)


class TritonModelException(Exception):
    """Raised by pb_utils helpers (a closed response sender, a failed BLS call)."""


# --- datatype helpers ------------------------------------------------------------------------------
def triton_to_numpy_type(data_type):
    """numpy dtype of a TRITONSERVER_DataType value (BYTES -> np.object_; BF16 unsupported)."""
    if data_type == TYPE_BF16:
        raise TritonModelException("bfloat16 has no numpy type; use to_dlpack() with torch")
    t = _NUMPY_OF.get(data_type)
    if t is None:
        raise TritonModelException("unknown Triton data type %r" % (data_type,))
    return t


_TRITON_OF_DTYPE = {}
for _k, _v in _NUMPY_OF.items():
    if _v is not np.object_:
        _TRITON_OF_DTYPE.setdefault(np.dtype(_v), _k)


def numpy_to_triton_type(data_type):
    """TRITONSERVER_DataType value of a numpy dtype (object/bytes/str -> TYPE_STRING), None if unknown."""
    dt = np.dtype(data_type)
    t = _TRITON_OF_DTYPE.get(dt)
    if t is not None:
        return t
    if dt == np.object_ or dt.kind in ("S", "U"):
        return TYPE_STRING
    return None


def triton_string_to_numpy(triton_type_string):
    """numpy dtype of a config data type string: 'TYPE_FP32' -> np.float32, 'TYPE_STRING' -> np.object_."""
    name = triton_type_string[5:] if triton_type_string.startswith("TYPE_") else triton_type_string
    if name == "STRING":
        name = "BYTES"
    if name not in _ENUM_OF:
        raise TritonModelException("unknown Triton data type '%s'" % triton_type_string)
    return triton_to_numpy_type(_ENUM_OF[name])


def serialize_byte_tensor(input_tensor):
    """Triton's BYTES wire form of an object/bytes/str array: uint8 array of [u32 LE length][bytes]
    per element, row-major. Returns None for an empty array."""
    if input_tensor.size == 0:
        return None
    parts = []
    for obj in np.nditer(input_tensor, flags=["refs_ok"], order="C"):
        v = obj.item()
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, (bytes, bytearray)):
            v = str(v).encode("utf-8")
        parts.append(len(v).to_bytes(4, "little"))
        parts.append(bytes(v))
    return np.frombuffer(b"".join(parts), dtype=np.uint8)


def deserialize_bytes_tensor(encoded_tensor):
    """Inverse of serialize_byte_tensor: a 1-D np.object_ array of bytes."""
    buf = memoryview(np.ascontiguousarray(encoded_tensor, dtype=np.uint8)).cast("B") if not isinstance(encoded_tensor, (bytes, bytearray, memoryview)) else memoryview(encoded_tensor)
    out = []
    pos, end = 0, len(buf)
    while pos < end:
        if pos + 4 > end:
            raise TritonModelException("malformed BYTES tensor: truncated length prefix")
        n = int.from_bytes(buf[pos:pos + 4], "little")
        pos += 4
        if pos + n > end:
            raise TritonModelException("malformed BYTES tensor: element longer than the buffer")
        out.append(bytes(buf[pos:pos + n]))
        pos += n
    arr = np.empty(len(out), dtype=np.object_)
    arr[:] = out
    return arr


# --- tensors ---------------------------------------------------------------------------------------
# to_dlpack of a BF16 tensor hands out a capsule of its raw uint16 words; from_dlpack recognises it
# (the last few such capsules are remembered, strongly referenced so their ids stay unique).
_bf16_capsules = []


class _CapsuleHolder:
    def __init__(self, capsule):
        self._c = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._c

    def __dlpack_device__(self):
        return (1, 0)


class Tensor:
    """A named tensor: ``Tensor(name, numpy_array)``. BYTES = np.object_ arrays of bytes (str is
    encoded as UTF-8). Shapes are numpy's; for batching models the first dim is the batch."""

    def __init__(self, name, data, _dtype=None):
        if not isinstance(name, str):
            raise TritonModelException("tensor name must be a string")
        self._name = name
        if _dtype == TYPE_BF16:
            self._arr = np.ascontiguousarray(data).view(np.uint16)
            self._dtype = TYPE_BF16
            return
        if not isinstance(data, np.ndarray):
            raise TritonModelException("pb_utils.Tensor expects a numpy array, got %s" % type(data).__name__)
        dt = numpy_to_triton_type(data.dtype)
        if dt is None:
            raise TritonModelException("unsupported numpy dtype %s for tensor '%s'" % (data.dtype, name))
        if data.dtype.kind in ("S", "U"):
            data = data.astype(np.object_)
        self._arr = data
        self._dtype = dt

    @classmethod
    def _wrap(cls, name, arr, dtype):
        """A tensor over ``arr`` whose Triton type is known (the stub's inputs): no checks."""
        t = cls.__new__(cls)
        t._name, t._arr, t._dtype = name, arr, dtype
        return t

    def name(self):
        return self._name

    def as_numpy(self):
        if self._dtype == TYPE_BF16:
            raise TritonModelException("tensor '%s' is bfloat16, which numpy cannot represent; use to_dlpack()" % self._name)
        return self._arr

    def shape(self):
        return list(self._arr.shape)

    def triton_dtype(self):
        return self._dtype

    def is_cpu(self):
        return True

    def memory_type(self):
        return TRITONSERVER_MEMORY_CPU

    def to_dlpack(self):
        if self._dtype == TYPE_BF16:
            try:
                import torch  # noqa: F401
                return torch.utils.dlpack.to_dlpack(torch.from_numpy(self._arr.view(np.int16).copy()).view(torch.bfloat16))
            except ImportError:
                cap = np.ascontiguousarray(self._arr).__dlpack__()
                _bf16_capsules.append(cap)
                del _bf16_capsules[:-64]
                return cap
        if self._dtype == TYPE_STRING:
            raise TritonModelException("BYTES tensors cannot be exported through DLPack")
        return np.ascontiguousarray(self._arr).__dlpack__()

    def __dlpack__(self, stream=None, **kwargs):
        return self.to_dlpack()

    def __dlpack_device__(self):
        return (1, 0)

    @staticmethod
    def from_dlpack(name, dlpack_tensor):
        """A tensor from a DLPack capsule or an object with ``__dlpack__`` (numpy, torch, ...)."""
        if any(c is dlpack_tensor for c in _bf16_capsules):
            return Tensor(name, np.from_dlpack(_CapsuleHolder(dlpack_tensor)), _dtype=TYPE_BF16)
        mod = type(dlpack_tensor).__module__
        if mod.startswith("torch"):
            import torch
            t = dlpack_tensor.detach().cpu().contiguous()
            if t.dtype == torch.bfloat16:
                return Tensor(name, t.view(torch.int16).numpy().view(np.uint16), _dtype=TYPE_BF16)
            return Tensor(name, t.numpy())
        if type(dlpack_tensor).__name__ == "PyCapsule":
            try:
                import torch
                return Tensor.from_dlpack(name, torch.utils.dlpack.from_dlpack(dlpack_tensor))
            except ImportError:
                return Tensor(name, np.from_dlpack(_CapsuleHolder(dlpack_tensor)))
        return Tensor(name, np.from_dlpack(dlpack_tensor))

    def __repr__(self):
        return "Tensor(%r, %s, shape=%s)" % (self._name, _NAME_OF.get(self._dtype), self.shape())


# --- requests and responses ------------------------------------------------------------------------
class PreferredMemory:
    def __init__(self, preferred_memory_type=TRITONSERVER_MEMORY_CPU, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceResponse:
    """``InferenceResponse(output_tensors=[], error=None, parameters=None)``; parameters are a dict
    of str/int/bool (or its JSON string) and read back as a JSON string."""

    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors or [])
        for t in self._outputs:
            if not isinstance(t, Tensor):
                raise TritonModelException("output_tensors must be pb_utils.Tensor objects")
        if error is not None and not isinstance(error, TritonError):
            error = TritonError(str(error))
        self._error = error
        if isinstance(parameters, str):
            parameters = json.loads(parameters) if parameters else {}
        parameters = dict(parameters or {})
        for k, v in parameters.items():
            if not isinstance(k, str) or not isinstance(v, (str, int, bool, float)):
                raise TritonModelException("response parameters must map strings to str, int, bool or float")
        self._parameters = parameters

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return json.dumps(self._parameters)


class InferenceResponseSender:
    """The sender of one request's responses (decoupled models): ``send(response=None, flags=0)``;
    exactly one call with ``TRITONSERVER_RESPONSE_COMPLETE_FINAL``."""

    def __init__(self, request):
        self._request = request
        self._closed = False
        self._lock = threading.Lock()

    def send(self, response=None, flags=0):
        with self._lock:
            if self._closed:
                raise TritonModelException("Unable to send response. Response sender has been closed.")
            final = bool(flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            if response is None and not final:
                raise TritonModelException("Inference Response object is needed when the flag is not final.")
            if final:
                self._closed = True
        _runtime.send_response(self._request._rid, response, final)

    def is_cancelled(self):
        return self._request.is_cancelled()


class InferenceRequest:
    """A request Warden passed to ``execute``, or a BLS request built by the model:
    ``InferenceRequest(model_name, requested_output_names, inputs, request_id="", correlation_id=0,
    model_version=-1, flags=0, timeout=0, preferred_memory=..., trace=None, parameters=None)``.
    ``timeout`` is in microseconds; ``parameters`` a dict or a JSON string."""

    def __init__(self, model_name="", requested_output_names=None, inputs=None, request_id="", correlation_id=0,
                 model_version=-1, flags=0, timeout=0, preferred_memory=None, trace=None, parameters=None,
                 **kwargs):
        # Triton's binding takes a std::string, which bytes convert to (pybind11): so do we
        if isinstance(model_name, (bytes, bytearray)):
            model_name = bytes(model_name).decode("utf-8")
        self._model_name = model_name
        self._requested = list(requested_output_names or [])
        self._inputs = list(inputs or [])
        for t in self._inputs:
            if not isinstance(t, Tensor):
                raise TritonModelException("inputs must be pb_utils.Tensor objects")
        self._id = request_id
        self._correlation_id = correlation_id
        self._model_version = int(model_version)
        self._flags = int(flags)
        self._timeout = int(timeout)
        self._preferred_memory = preferred_memory or PreferredMemory()
        self._trace = trace
        if isinstance(parameters, str):
            parameters = json.loads(parameters) if parameters else {}
        self._parameters = dict(parameters or {})
        self._rid = None  # Warden's id of a request passed to execute
        self._sender = None
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL

    @classmethod
    def _from_warden(cls, rid, model_name, requested_output_names, inputs, request_id, correlation_id, flags, timeout, parameters):
        """A request Warden passed to ``execute`` (the stub's, per request): values already of
        the right types, so no checks or conversions."""
        r = cls.__new__(cls)
        r._model_name, r._requested, r._inputs, r._id, r._correlation_id = model_name, requested_output_names, inputs, request_id, correlation_id
        r._model_version, r._flags, r._timeout, r._preferred_memory, r._trace = -1, flags, timeout, PreferredMemory(), None
        r._parameters, r._rid, r._sender, r._release_flags = parameters, rid, None, TRITONSERVER_REQUEST_RELEASE_ALL
        return r

    def inputs(self):
        return self._inputs

    def requested_output_names(self):
        return self._requested

    def request_id(self):
        return self._id

    def correlation_id(self):
        return self._correlation_id

    def model_name(self):
        return self._model_name

    def model_version(self):
        return self._model_version

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = int(flags)

    def timeout(self):
        return self._timeout

    def parameters(self):
        return json.dumps(self._parameters)

    def trace(self):
        return self._trace

    def set_release_flags(self, flags):
        """How the request is released when ``execute`` returns: ``TRITONSERVER_REQUEST_RELEASE_ALL``
        (the default) or ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE``, to run it again (a model with
        ``sequence_batching { iterative_sequence: true }``; elsewhere the request gets Triton's
        INVALID_ARG error). A non-decoupled model returns None for a rescheduled request."""
        self._release_flags = int(flags)

    def is_cancelled(self):
        return self._rid is not None and _runtime.is_cancelled(self._rid)

    def get_response_sender(self):
        if self._rid is None:
            raise TritonModelException("only requests passed to execute have a response sender")
        if self._sender is None:
            self._sender = InferenceResponseSender(self)
        return self._sender

    def exec(self, decoupled=False):
        """Run this request on another model (BLS, through Warden's scheduler). Returns an
        InferenceResponse (its error set on failure), or for ``decoupled=True`` an iterator over
        the responses, the last one carrying the final flag (possibly with no outputs)."""
        return _runtime.bls_exec(self, decoupled)

    def async_exec(self, decoupled=False):
        """Awaitable form of exec (inside ``async def execute``)."""
        return _runtime.bls_async_exec(self, decoupled)


# --- helpers ---------------------------------------------------------------------------------------
def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for i in model_config.get("input", []):
        if i["name"] == name:
            return i
    return None


def get_output_config_by_name(model_config, name):
    for o in model_config.get("output", []):
        if o["name"] == name:
            return o
    return None


def using_decoupled_model_transaction_policy(model_config):
    return bool(model_config.get("model_transaction_policy", {}).get("decoupled", False))


def get_model_dir():
    return _runtime.model_dir if _runtime else ""


def _model_control(msg, failed):
    """One model-control call answered by Warden (``Failed to ...: <reason>`` on error, as Triton)."""
    answer = _runtime.query(msg)
    if "error" in answer:
        raise TritonModelException("%s: %s" % (failed, answer["error"]))
    return answer.get("value")


def is_model_ready(model_name, model_version=""):
    """Whether a model (version; "" = the server's choice) is ready in Warden, as this model's
    owner sees it (spec section 7.2). Raises TritonModelException for a version string that is not
    a non-negative integer."""
    v = str(model_version)
    version = -1
    if v:
        try:
            version = int(v)
        except ValueError as e:
            raise TritonModelException("Failed to check model readiness: failed to get model version from specified version string '%s' (details: %s), version should be an integral value > 0" % (v, e))
        if version < 0:
            raise TritonModelException("Failed to check model readiness: failed to get model version from specified version string '%s', version should be an integral value > 0" % v)
    return bool(_model_control({"op": "is_model_ready", "model": str(model_name), "version": version}, "Failed to check model readiness"))


def load_model(model_name, config="", files=None):
    """Load or reload ``model_name`` through Warden's repository API (spec section 7.2; explicit
    model-control mode only), as this model's owner: ``config`` is a JSON model config override,
    ``files`` a dict ``{"file:<version>/<path>": bytes}`` of file overrides (checked as the HTTP
    load API checks them; Python and native code are never accepted by upload). Returns once the
    model is ready; raises TritonModelException("Failed to load model: ...") otherwise."""
    name = str(model_name)
    wire = []
    if files is not None:
        if not isinstance(files, dict):
            raise TritonModelException("failed to load model '%s', files should be a dictionary of file paths and file contents" % name)
        for key, content in files.items():
            if not isinstance(key, str) or not isinstance(content, (bytes, bytearray, memoryview)):
                raise TritonModelException("failed to load model '%s', files should be a dictionary of file paths and file contents" % name)
        try:
            for key, content in files.items():
                off, size = _runtime.out_arena.write(content)
                wire.append([key, off, size])
        except Exception:
            for _, off, size in wire:
                _runtime.out_arena.free(off, size)
            raise
    _model_control({"op": "load_model", "model": name, "config": str(config or ""), "files": wire}, "Failed to load model")


def unload_model(model_name, unload_dependents=False):
    """Unload ``model_name`` (spec section 7.2; explicit mode only). Returns once the model stops
    taking new requests (its in-flight requests, this one included when a model unloads itself,
    finish first), so a model can unload itself without waiting on its own execute."""
    _model_control({"op": "unload_model", "model": str(model_name), "unload_dependents": bool(unload_dependents)}, "Failed to unload model")



# --- logging ---------------------------------------------------------------------------------------
class Logger:
    """Messages into Warden's log, with the model's name (``TRITONSERVER_LogMessage``)."""

    INFO, WARNING, ERROR, VERBOSE = 0, 1, 2, 3

    @staticmethod
    def log(message, level=0):
        if _runtime is not None:
            _runtime.log(level, str(message))
        else:
            print(message, file=sys.stderr)

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


# --- custom metrics --------------------------------------------------------------------------------
class MetricFamily:
    """A custom metric family on Warden's ``/metrics``: ``MetricFamily(name, description, kind)``."""

    COUNTER, GAUGE, HISTOGRAM = 0, 1, 2
    _KINDS = ["counter", "gauge", "histogram"]

    def __init__(self, name, description, kind):
        if kind not in (0, 1, 2):
            raise TritonModelException("metric kind must be COUNTER, GAUGE or HISTOGRAM")
        self.name, self.description, self.kind = str(name), str(description), kind
        _runtime.metric({"action": "family", "family": self.name, "description": self.description, "kind": self._KINDS[kind]})

    def Metric(self, labels=None, buckets=None):
        return Metric(self, labels or {}, buckets)


class Metric:
    """One labelled series of a MetricFamily: ``increment`` (counter, gauge), ``set`` (gauge),
    ``observe`` (histogram); ``value()`` is this process's own value (counter, gauge)."""

    def __init__(self, family, labels, buckets=None):
        self._family, self._labels = family, {str(k): str(v) for k, v in labels.items()}
        self._value = 0.0
        if family.kind == MetricFamily.HISTOGRAM and not buckets:
            raise TritonModelException("histogram metrics need buckets")
        self._buckets = list(buckets) if buckets else None
        _runtime.metric({"action": "metric", "family": family.name, "labels": self._labels, "buckets": self._buckets})

    def _send(self, action, value):
        _runtime.metric({"action": action, "family": self._family.name, "labels": self._labels, "value": float(value)})

    def increment(self, value):
        if self._family.kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("a counter cannot be decremented")
        if self._family.kind == MetricFamily.HISTOGRAM:
            raise TritonModelException("increment is not supported on a histogram")
        self._value += value
        self._send("increment", value)

    def set(self, value):
        if self._family.kind != MetricFamily.GAUGE:
            raise TritonModelException("set is supported on gauges only")
        self._value = float(value)
        self._send("set", value)

    def observe(self, value):
        if self._family.kind != MetricFamily.HISTOGRAM:
            raise TritonModelException("observe is supported on histograms only")
        self._send("observe", value)

    def value(self):
        return self._value


# --- auto-complete ---------------------------------------------------------------------------------
class ModelConfig:
    """What ``auto_complete_config`` receives: the model config as a dict, with Triton's setters."""

    def __init__(self, model_config):
        self._config = json.loads(model_config) if isinstance(model_config, str) else model_config

    def as_dict(self):
        return self._config

    def set_max_batch_size(self, max_batch_size):
        cur = self._config.get("max_batch_size", 0)
        if cur and cur != max_batch_size:
            raise ValueError("configuration specified max_batch_size %d, but in auto-complete-config function for model '%s' specified max_batch_size %d" % (cur, self._config.get("name"), max_batch_size))
        self._config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        if "sequence_batching" in self._config:
            raise ValueError("Configuration specified scheduling_choice as 'sequence_batching', but auto-complete-config function for model '%s' tries to set scheduling_choice as 'dynamic_batching'" % self._config.get("name"))
        self._config.setdefault("dynamic_batching", {})

    def set_model_transaction_policy(self, transaction_policy_dict):
        self._config["model_transaction_policy"] = dict(transaction_policy_dict)

    def _add(self, key, entry):
        if not isinstance(entry, dict) or "name" not in entry:
            raise ValueError("%s must be a dict with a 'name'" % key)
        for existing in self._config.setdefault(key, []):
            if existing["name"] == entry["name"]:
                for k, v in entry.items():
                    if k in existing and existing[k] != v and not (k == "data_type" and str(existing[k]).replace("TYPE_", "") == str(v).replace("TYPE_", "")) and k != "dims":
                        raise ValueError("unable to auto-complete %s '%s': '%s' differs from the configuration" % (key, entry["name"], k))
                    existing.setdefault(k, v)
                return
        self._config[key].append(dict(entry))

    def add_input(self, input):
        self._add("input", input)

    def add_output(self, output):
        self._add("output", output)
