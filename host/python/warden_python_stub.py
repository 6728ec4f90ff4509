"""Warden's Python backend stub: one process per model instance (spec section 7), started and
supervised by host/src/backends/python. It imports the model's ``model.py``, runs
``TritonPythonModel`` (``auto_complete_config``, ``initialize``, ``execute`` sync or async,
``finalize``) and talks to Warden over fd 3 (a Unix socket pair):

- control messages: ``[u32 LE length][JSON]``, at most MAX_MESSAGE bytes each, optionally
  followed by ``\n`` and a binary *tail*: the bytes of small tensors of that message (a tensor
  spec with ``"inline": true`` has its ``offset`` in the tail). Requests' inputs and responses'
  outputs up to INLINE_MAX bytes travel so, which saves an arena allocation, free and Warden's
  positioned read or write per tensor;
- other tensor bytes: two POSIX shared-memory files in /dev/shm, never through the socket.
  ``in``: written by Warden (request inputs, BLS responses), mapped here read-only in spirit;
  ``out``: allocated here (responses, BLS request inputs), read by Warden, which then frees them.

Threads (no thread hand-off per request): the socket is read by whichever
thread needs a message, one at a time (the *pump* role, ``Runtime.pump_until``). The idle main
thread reads and runs ``execute`` itself, in one asyncio event loop shared by ``async def
execute`` calls (which read the socket through ``add_reader`` while they await). A thread waiting
for Warden (a BLS ``exec``, ``is_model_ready``, ``load_model``) reads until its answer came,
handing other messages on (cancellations, other callers' answers, frees; a new batch is queued for
the main thread). ``is_cancelled()`` reads what is already there without blocking. While an
``execute`` runs longer than WATCH_S without reading, a watchdog thread reads what arrives, so
cancellations and readiness checks are not held up. A model that defines ``is_ready`` is asked on
a readiness thread with its own event loop (for ``async def is_ready``).
"""
import asyncio
import collections
import importlib.util
import inspect
import json
import mmap
import os
import queue
import select
import socket
import struct
import sys
import threading
import time
import traceback

import numpy as np

import triton_python_backend_utils as pb_utils

MAX_MESSAGE = 16 * 1024 * 1024
# How long an execute may run without reading the socket before the watchdog reads for it (s).
WATCH_S = 0.01
# The watchdog parks (blocks until the next execute) after this long without one (s).
WATCH_PARK_S = 1.0
ALIGN = 64
_HEADER = struct.Struct("<I")
# Tensors up to INLINE_MAX bytes ride in their message's tail, up to INLINE_TAIL_MAX bytes per
# message (host/src/backends/python/wire.ts has the same bounds); tail offsets are INLINE_ALIGN-aligned.
INLINE_MAX = 16 * 1024
INLINE_TAIL_MAX = 1024 * 1024
INLINE_ALIGN = 8
# The key of a decoded message's tail (never a JSON key: those are strings).
_TAIL = object()
# JSON without per-call setup (json.dumps and json.loads build an encoder / match whitespace on every call).
_DECODE = json.JSONDecoder().raw_decode
if json.encoder.c_make_encoder is not None:
    _C_ENCODE = json.encoder.c_make_encoder(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True)

    def _encode(msg):
        return "".join(_C_ENCODE(msg, 0)).encode("utf-8")
else:  # an interpreter without the _json accelerator
    _ENCODER = json.JSONEncoder(separators=(",", ":"))

    def _encode(msg):
        return _ENCODER.encode(msg).encode("utf-8")

_ENUM_OF = pb_utils._ENUM_OF
_NP_OF = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "BF16": np.uint16,
}
_DTYPE_OF = {k: np.dtype(v) for k, v in _NP_OF.items()}


class OutArena:
    """The shared-memory file this process allocates in (first fit, 64-byte aligned, grows by
    doubling up to ``limit`` bytes). Regions are freed when Warden has read them."""

    def __init__(self, path, limit):
        self.path, self.limit = path, limit
        self.fd = os.open(path, os.O_RDWR)
        self.size = max(os.fstat(self.fd).st_size, 1 << 20)
        os.ftruncate(self.fd, self.size)
        self.map = mmap.mmap(self.fd, self.size)
        self.free_list = [(0, self.size)]
        self.lock = threading.Lock()

    def alloc(self, n):
        n = max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)
        with self.lock:
            for i, (off, size) in enumerate(self.free_list):
                if size >= n:
                    if size == n:
                        del self.free_list[i]
                    else:
                        self.free_list[i] = (off + n, size - n)
                    return off
            new_size = self.size
            while True:
                tail = self.free_list[-1] if self.free_list and self.free_list[-1][0] + self.free_list[-1][1] == self.size else None
                have = tail[1] if tail else 0
                if have + (new_size - self.size) >= n:
                    break
                new_size *= 2
            if new_size > self.limit:
                raise pb_utils.TritonModelException("shared memory arena would exceed %d bytes" % self.limit)
            os.ftruncate(self.fd, new_size)
            # The old mapping stays valid for its range (numpy views may still use it).
            self.map = mmap.mmap(self.fd, new_size)
            if tail:
                self.free_list[-1] = (tail[0], tail[1] + new_size - self.size)
            else:
                self.free_list.append((self.size, new_size - self.size))
            self.size = new_size
        return self.alloc(n)

    def free(self, off, n):
        n = max(ALIGN, (n + ALIGN - 1) // ALIGN * ALIGN)
        with self.lock:
            fl = self.free_list
            fl.append((off, n))
            fl.sort()
            merged = []
            for o, s in fl:
                if merged and merged[-1][0] + merged[-1][1] == o:
                    merged[-1] = (merged[-1][0], merged[-1][1] + s)
                else:
                    merged.append((o, s))
            self.free_list = merged

    def write(self, data):
        """Copy a C-contiguous buffer into a new region; returns (offset, size)."""
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        off = self.alloc(n)
        if n:
            self.map[off:off + n] = mv
        return off, n


class InArena:
    """The shared-memory file Warden writes; remapped when Warden says it grew."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR)
        self.size = 0
        self.map = None
        self.lock = threading.Lock()

    def ensure(self, size):
        with self.lock:
            if size > self.size:
                self.map = mmap.mmap(self.fd, size)
                self.size = size
            return self.map


class Runtime:
    def __init__(self, sock, init):
        self.sock = sock
        self.send_lock = threading.Lock()
        self.cancelled = set()
        self.cancel_lock = threading.Lock()
        self.in_arena = InArena(init["in_path"])
        self.out_arena = OutArena(init["out_path"], int(init.get("arena_limit", 1 << 31)))
        self.model_dir = init.get("model_dir", "")
        self.work = collections.deque()
        self.ready_q = queue.Queue()
        # the pump role: one reader at a time; cv guards pumping, work and wakes waiters
        self.cv = threading.Condition()
        self.pumping = False
        self.rbuf = bytearray()
        self.rchunk = bytearray(1 << 16)
        self.rview = memoryview(self.rchunk)
        self.executing_since = 0.0
        self.watch_parked = False
        self.watch_wake = threading.Event()
        self.bls_waiters = {}
        self.bls_lock = threading.Lock()
        self.next_cid = 1
        self.loop = asyncio.new_event_loop()

    # ---- transport ----
    def send(self, msg, tail=None):
        """Send ``msg`` (JSON text never holds a raw newline) and ``tail``'s inline tensors."""
        body = _encode(msg)
        n = len(body) + (1 + len(tail) if tail else 0)
        if n > MAX_MESSAGE:
            raise pb_utils.TritonModelException("message to Warden too large (%d bytes)" % n)
        frame = _HEADER.pack(n) + body + b"\n" + tail if tail else _HEADER.pack(n) + body
        with self.send_lock:
            self.sock.sendall(frame)

    def read_frame(self):
        """One message off the socket (the pump role's holder only); buffered, so a message usually
        costs one ``recv``."""
        buf = self.rbuf
        while True:
            if len(buf) >= 4:
                (n,) = _HEADER.unpack_from(buf, 0)
                if n > MAX_MESSAGE:
                    raise ValueError("message from Warden too large")
                end = 4 + n
                if len(buf) >= end:
                    nl = buf.find(b"\n", 4, end)
                    if nl < 0:
                        msg = _DECODE(buf[4:end].decode("utf-8"))[0]
                    else:
                        msg = _DECODE(buf[4:nl].decode("utf-8"))[0]
                        msg[_TAIL] = buf[nl + 1:end]  # a copy: arrays viewing it own it
                    del buf[:end]
                    return msg
            k = self.sock.recv_into(self.rchunk)
            if k == 0:
                raise EOFError()
            buf += self.rview[:k]

    def dispatch(self, msg):
        """Act on one message from Warden; a new batch (or finalize) is queued for the main thread."""
        op = msg.get("op")
        for off, size in msg.get("free", ()):
            self.out_arena.free(off, size)
        if op == "cancel":
            with self.cancel_lock:
                self.cancelled.update(msg["rids"])
        elif op == "free":
            pass
        elif op == "query_response":
            with self.bls_lock:
                deliver = self.bls_waiters.pop(msg["cid"], None)
            if deliver:
                deliver(msg, True)
        elif op == "bls_response":
            self.on_bls_response(msg)
        elif op == "is_ready":
            self.ready_q.put(msg)
        else:
            with self.cv:
                self.work.append(msg)

    def _pump_one(self):
        """Read and dispatch one message, and every further one already buffered (so no complete
        message waits in the buffer while the socket looks idle), holding the pump role (taken by
        the caller). Warden gone or a malformed message: the process ends."""
        try:
            self.dispatch(self.read_frame())
            while self._frame_buffered():
                self.dispatch(self.read_frame())
        except BaseException:
            os._exit(0)

    def pump_until(self, done):
        """Block until ``done()`` (checked under ``cv``) holds, reading the socket meanwhile unless
        another thread is (then waiting for it to hand something over)."""
        cv = self.cv
        with cv:
            while not done():
                if self.pumping:
                    cv.wait()
                    continue
                self.pumping = True
                cv.release()
                try:
                    self._pump_one()
                finally:
                    cv.acquire()
                    self.pumping = False
                    cv.notify_all()

    def pump_available(self):
        """Read whatever has arrived, without blocking (nothing if another thread holds the role)."""
        cv = self.cv
        with cv:
            if self.pumping:
                return
            self.pumping = True
        try:
            while self._frame_buffered() or select.select([self.sock], [], [], 0)[0]:
                self._pump_one()
        finally:
            with cv:
                self.pumping = False
                cv.notify_all()

    def _frame_buffered(self):
        buf = self.rbuf
        return len(buf) >= 4 and len(buf) >= 4 + _HEADER.unpack_from(buf, 0)[0]

    def next_work(self):
        """The next batch / finalize for the main thread (reading the socket until one came)."""
        self.pump_until(lambda: self.work)
        with self.cv:
            return self.work.popleft()

    def run(self, coro):
        """Run a coroutine on the model's event loop; the socket is read while it awaits."""
        fd = self.sock.fileno()
        self.loop.add_reader(fd, self.pump_available)
        try:
            return self.loop.run_until_complete(coro)
        finally:
            self.loop.remove_reader(fd)

    def watchdog(self):
        """Read for an execute that has run WATCH_S without reading (cancellations, is_ready)."""
        idle_since = time.monotonic()
        while True:
            time.sleep(WATCH_S)
            since = self.executing_since
            now = time.monotonic()
            if since:
                idle_since = now
                if now - since >= WATCH_S:
                    self.pump_available()
            elif now - idle_since > WATCH_PARK_S:
                self.watch_parked = True
                if self.executing_since:
                    self.watch_parked = False
                    continue
                self.watch_wake.wait()
                self.watch_wake.clear()
                idle_since = time.monotonic()

    def begin_execute(self):
        self.executing_since = time.monotonic()
        if self.watch_parked:
            self.watch_parked = False
            self.watch_wake.set()

    def end_execute(self):
        self.executing_since = 0.0

    # ---- tensors ----
    def tensors_in(self, specs, copy, tail=None):
        """pb_utils.Tensors from regions of the in-arena (views unless ``copy``) or, for inline
        ones, of the message's ``tail`` (views of a buffer of their own)."""
        out = []
        for s in specs:
            inline = s.get("inline")
            if inline:
                m = tail
            else:
                m = self.in_arena.ensure(s["arena_size"]) if "arena_size" in s else self.in_arena.map
            off, size, dt = s["offset"], s["size"], s["datatype"]
            if inline and (m is None or off < 0 or size < 0 or off + size > len(m)):
                raise ValueError("inline tensor %r lies outside its message" % s["name"])
            if dt == "BYTES":
                arr = pb_utils.deserialize_bytes_tensor(memoryview(m)[off:off + size]).reshape(s["shape"])
            else:
                npdt = _DTYPE_OF[dt]
                count = size // npdt.itemsize
                arr = np.frombuffer(m, dtype=npdt, count=count, offset=off).reshape(s["shape"])
                if copy and not inline:
                    arr = arr.copy()
            out.append(pb_utils.Tensor._wrap(s["name"], arr, _ENUM_OF[dt]))
        return out

    def tensors_out(self, tensors, tail=None):
        """Copy tensors into the out-arena, or small ones into ``tail`` (a bytearray) when given;
        returns their wire specs."""
        specs = []
        for t in tensors:
            dt = pb_utils._NAME_OF[t.triton_dtype()]
            arr = t._arr
            if dt == "BYTES":
                data = pb_utils.serialize_byte_tensor(arr)
                data = data if data is not None else np.zeros(0, np.uint8)
            else:
                if arr.dtype.kind == "b" and dt == "BOOL":
                    arr = arr.astype(np.bool_)
                data = np.ascontiguousarray(arr)
                if data.dtype.byteorder == ">":
                    data = data.astype(data.dtype.newbyteorder("<"))
            size = data.nbytes
            if tail is not None and size <= INLINE_MAX and len(tail) + size <= INLINE_TAIL_MAX:
                pad = -len(tail) % INLINE_ALIGN
                if pad:
                    tail += bytes(pad)
                off = len(tail)
                if size:
                    tail += memoryview(data).cast("B")
                specs.append({"name": t.name(), "datatype": dt, "shape": [int(d) for d in arr.shape], "offset": off, "size": size, "inline": True})
                continue
            off, size = self.out_arena.write(data)
            specs.append({"name": t.name(), "datatype": dt, "shape": [int(d) for d in arr.shape], "offset": off, "size": size})
        return specs

    # ---- responses ----
    def send_response(self, rid, response, final):
        tail = bytearray()
        self.send(self.response_message(rid, response, final, tail), tail)

    def response_message(self, rid, response, final, tail=None):
        """The ``response`` message; small outputs go into ``tail`` when given (the frame's)."""
        msg = {"op": "response", "rid": rid, "final": bool(final)}
        if response is not None:
            if not isinstance(response, pb_utils.InferenceResponse):
                raise pb_utils.TritonModelException("expected a pb_utils.InferenceResponse, got %s" % type(response).__name__)
            if response.has_error():
                msg["error"] = response.error()._wire()
            else:
                msg["outputs"] = self.tensors_out(response.output_tensors(), tail)
                if response._parameters:
                    msg["parameters"] = response._parameters
        return msg

    def is_cancelled(self, rid):
        self.pump_available()
        with self.cancel_lock:
            return rid in self.cancelled

    def log(self, level, message):
        self.send({"op": "log", "level": level, "message": message})

    def metric(self, m):
        m["op"] = "metric"
        self.send(m)

    # ---- queries answered by Warden (is_model_ready, load_model, unload_model) ----
    def query(self, msg):
        """Send ``msg`` and wait for Warden's answer: ``{"value": ...}`` or ``{"error": text}``."""
        box = collections.deque()
        with self.bls_lock:
            cid = self.next_cid
            self.next_cid += 1
            self.bls_waiters[cid] = lambda r, f: box.append(r)
        self.send(dict(msg, cid=cid))
        self.pump_until(lambda: box)
        return box.popleft()

    # ---- BLS ----
    def _bls_start(self, request, decoupled, deliver):
        with self.bls_lock:
            cid = self.next_cid
            self.next_cid += 1
            self.bls_waiters[cid] = deliver
        corr = request.correlation_id()
        try:
            self.send({
                "op": "bls", "cid": cid, "model": request.model_name(), "version": request.model_version(),
                "decoupled": bool(decoupled), "id": request.request_id(),
                "correlation_id": corr if isinstance(corr, str) else int(corr),
                "flags": request.flags(), "timeout": request.timeout(), "parameters": request._parameters,
                "requested_outputs": request.requested_output_names(), "inputs": self.tensors_out(request.inputs()),
            })
        except Exception:
            with self.bls_lock:
                self.bls_waiters.pop(cid, None)
            raise

    def on_bls_response(self, msg):
        with self.bls_lock:
            deliver = self.bls_waiters.get(msg["cid"])
            if msg.get("final"):
                self.bls_waiters.pop(msg["cid"], None)
        outputs = msg.get("outputs", [])
        tensors = self.tensors_in(outputs, copy=True) if outputs else []
        if outputs:
            self.send({"op": "free_in", "regions": [[o["offset"], o["size"]] for o in outputs]})
        err = pb_utils.TritonError._from_wire(msg["error"]) if "error" in msg else None
        resp = pb_utils.InferenceResponse(output_tensors=tensors, error=err, parameters=msg.get("parameters"))
        if deliver is not None:
            deliver(resp, bool(msg.get("final")))

    def bls_exec(self, request, decoupled):
        box = collections.deque()
        self._bls_start(request, decoupled, lambda r, f: box.append((r, f)))
        if not decoupled:
            self.pump_until(lambda: box)
            return box.popleft()[0]

        def responses():
            while True:
                self.pump_until(lambda: box)
                r, final = box.popleft()
                yield r
                if final:
                    return
        return responses()

    def bls_async_exec(self, request, decoupled):
        loop = asyncio.get_event_loop()
        fut = loop.create_future()
        collected = []

        def deliver(r, final):
            if not decoupled:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(r))
                return
            collected.append(r)
            if final:
                loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(iter(collected)))

        self._bls_start(request, decoupled, deliver)
        return fut


def load_model_class(path, extra_paths):
    for p in extra_paths:
        if p and p not in sys.path:
            sys.path.insert(0, p)
    spec = importlib.util.spec_from_file_location("model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["model"] = module
    spec.loader.exec_module(module)
    cls = getattr(module, "TritonPythonModel", None)
    if cls is None:
        raise RuntimeError("%s defines no class TritonPythonModel" % os.path.basename(path))
    return cls


def error_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def run_execute(rt, model, msg, decoupled):
    requests = []
    tail_in = msg.get(_TAIL)
    model_name = msg.get("model", "")
    for r in msg["requests"]:
        # Warden leaves out fields at their defaults (host/src/backends/python/instance.ts).
        corr = r.get("correlation_id", 0)
        requests.append(pb_utils.InferenceRequest._from_warden(
            r["rid"], model_name, r["requested_outputs"], rt.tensors_in(r["inputs"], False, tail_in), r.get("id", ""),
            int(corr) if r.get("correlation_id_int") else corr, r.get("flags", 0), r.get("timeout", 0), r.get("parameters") or {}))
    error = None
    done = {"op": "executed", "eid": msg["eid"]}
    tail = bytearray()  # the responses' small outputs
    rescheduled = set()
    rt.begin_execute()
    try:
        result = model.execute(requests)
        if inspect.iscoroutine(result):
            result = rt.run(result)
        # set_release_flags(RESCHEDULE): run again (python_be.cc releases with the request's flags)
        rescheduled = set(r._rid for r in requests if r._release_flags & pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
        if decoupled:
            if result is not None:
                error = "the Python model is decoupled: execute must return None (responses go through the response sender)"
        else:
            if result is None or not isinstance(result, (list, tuple)):
                error = "execute must return a list of pb_utils.InferenceResponse, got %s" % type(result).__name__
            elif len(result) != len(requests):
                error = "Number of InferenceResponse objects do not match the number of InferenceRequest objects. InferenceRequest(s) size is:%d, and InferenceResponse(s) size is:%d" % (len(requests), len(result))
            else:
                # the responses travel in the `executed` message itself (one frame per batch)
                done["responses"] = []
                for req, resp in zip(requests, result):
                    if req._rid in rescheduled:
                        if resp is not None:  # Triton's text (pb_stub.cc), spelling included
                            error = "Expected a None object in the execute function return list for reschduled request, found type '%s'." % type(resp)
                            break
                        continue
                    if resp is None:
                        error = "execute returned None as a response"
                        break
                    done["responses"].append(rt.response_message(req._rid, resp, True, tail))
    except Exception as e:  # the model's exception becomes every request's error
        error = error_text(e)
        pb_utils.Logger.log_error("execute raised: %s" % traceback.format_exc())
    rt.end_execute()
    if error is not None:
        done["error"] = error
    elif rescheduled:
        done["rescheduled"] = sorted(rescheduled)
    rt.send(done, tail)


def readiness_loop(rt, model):
    """Answer ``is_ready`` queries (spec section 7.1): the model's ``is_ready()`` (sync or async)
    must return a bool; anything else, or an exception, means not ready and is reported."""
    loop = asyncio.new_event_loop()
    while True:
        msg = rt.ready_q.get()
        out = {"op": "is_ready_result", "qid": msg.get("qid")}
        try:
            r = model.is_ready()
            if inspect.iscoroutine(r):
                r = loop.run_until_complete(r)
            if isinstance(r, bool):
                out["ready"] = r
            else:
                out["ready"] = False
                out["error"] = "is_ready() must return a bool, got %s" % type(r).__name__
        except Exception as e:
            out["ready"] = False
            out["error"] = error_text(e)
        try:
            rt.send(out)
        except Exception:
            pass


def main():
    sock = socket.socket(fileno=3)
    (n,) = _HEADER.unpack(_recv(sock, 4))
    if n > MAX_MESSAGE:
        os._exit(3)
    init = json.loads(_recv(sock, n))
    rt = Runtime(sock, init)
    pb_utils._runtime = rt
    threading.Thread(target=rt.watchdog, daemon=True, name="warden-watchdog").start()
    try:
        cls = load_model_class(init["model_file"], init.get("sys_paths", []))
        if init.get("mode") == "auto_complete":
            config = init["config"]
            if hasattr(cls, "auto_complete_config"):
                result = cls.auto_complete_config(pb_utils.ModelConfig(config))
                config = result.as_dict() if isinstance(result, pb_utils.ModelConfig) else config
            rt.send({"op": "auto_completed", "config": config})
            rt.next_work()
            return
        model = cls()
        asyncio.set_event_loop(rt.loop)
        if hasattr(model, "initialize"):
            rt.begin_execute()
            r = model.initialize(init["args"])
            if inspect.iscoroutine(r):
                rt.run(r)
            rt.end_execute()
    except Exception as e:
        rt.end_execute()
        rt.send({"op": "init_failed", "error": error_text(e), "trace": traceback.format_exc()})
        rt.next_work()
        return
    has_is_ready = callable(getattr(model, "is_ready", None))
    if has_is_ready:
        threading.Thread(target=readiness_loop, args=(rt, model), daemon=True, name="warden-is-ready").start()
    rt.send({"op": "ready", "has_is_ready": has_is_ready})
    decoupled = bool(init.get("decoupled"))
    while True:
        msg = rt.next_work()
        op = msg.get("op")
        if op == "execute":
            run_execute(rt, model, msg, decoupled)
        elif op == "finalize":
            try:
                if hasattr(model, "finalize"):
                    rt.begin_execute()
                    r = model.finalize()
                    if inspect.iscoroutine(r):
                        rt.run(r)
                    rt.end_execute()
            except Exception:
                pb_utils.Logger.log_error("finalize raised: %s" % traceback.format_exc())
            rt.send({"op": "finalized"})
            return


def _recv(sock, n):
    buf = b""
    while len(buf) < n:
        k = sock.recv(n - len(buf))
        if not k:
            os._exit(0)
        buf += k
    return buf


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
