"""Warden's vLLM bridge: a Python-based backend (``backend: "vllm"``) implementing the I/O
contract of Triton's vLLM backend (spec section 7.3) on an engine behind a narrow boundary
(engine.py: vLLM's async engine, or a factory named in model.json).

Inputs: text_input (prompt), stream, sampling_parameters (JSON) or the request parameters,
exclude_input_in_output, return_finish_reason / return_cumulative_logprob / return_logprobs /
return_num_input_tokens / return_num_output_tokens. Outputs: text_output (one per choice; deltas
while streaming), finish_reason, cumulative_logprob, logprobs (JSON), num_input_tokens,
num_output_tokens. Decoupled; cancellation aborts the engine request and answers CANCELLED.
"""
import asyncio
import json
import os
import sys
import threading

import numpy as np

import triton_python_backend_utils as pb_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from engine import create_engine  # noqa: E402

_INPUTS = [
    {"name": "text_input", "data_type": "TYPE_STRING", "dims": [1]},
    {"name": "image", "data_type": "TYPE_STRING", "dims": [-1], "optional": True},
    {"name": "stream", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "sampling_parameters", "data_type": "TYPE_STRING", "dims": [1], "optional": True},
    {"name": "exclude_input_in_output", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "return_finish_reason", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "return_cumulative_logprob", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "return_logprobs", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "return_num_input_tokens", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
    {"name": "return_num_output_tokens", "data_type": "TYPE_BOOL", "dims": [1], "optional": True},
]
_OUTPUTS = [
    {"name": "text_output", "data_type": "TYPE_STRING", "dims": [-1]},
    {"name": "finish_reason", "data_type": "TYPE_STRING", "dims": [-1]},
    {"name": "cumulative_logprob", "data_type": "TYPE_FP32", "dims": [-1]},
    {"name": "logprobs", "data_type": "TYPE_STRING", "dims": [-1]},
    {"name": "num_input_tokens", "data_type": "TYPE_UINT32", "dims": [1]},
    {"name": "num_output_tokens", "data_type": "TYPE_UINT32", "dims": [-1]},
]

# SamplingParams fields and their types (sampling_parameters values may arrive as strings).
_INT = {"n", "best_of", "max_tokens", "min_tokens", "top_k", "seed", "logprobs", "prompt_logprobs"}
_FLOAT = {"temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "length_penalty"}
_BOOL = {"ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "use_beam_search", "include_stop_str_in_output"}
# Request parameters that are not sampling parameters.
_NOT_SAMPLING = {"stream", "exclude_input_in_output", "text_input", "sampling_parameters"} | {i["name"] for i in _INPUTS}


def _as_bool(v):
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes")
    return bool(v)


def sampling_from(params):
    out = {}
    for k, v in params.items():
        if k in _NOT_SAMPLING:
            continue
        if k in _INT:
            out[k] = int(v)
        elif k in _FLOAT:
            out[k] = float(v)
        elif k in _BOOL:
            out[k] = _as_bool(v)
        else:
            out[k] = v
    return out


class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        for i in _INPUTS:
            auto_complete_model_config.add_input(i)
        for o in _OUTPUTS:
            auto_complete_model_config.add_output(o)
        auto_complete_model_config.set_max_batch_size(0)
        auto_complete_model_config.set_model_transaction_policy({"decoupled": True})
        return auto_complete_model_config

    def initialize(self, args):
        self.config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(self.config):
            raise pb_utils.TritonModelException("the vLLM backend only supports the decoupled transaction policy")
        self.outputs = {o["name"] for o in self.config.get("output", [])}
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(version_dir, "model.json")) as f:
            engine_args = json.load(f)
        if version_dir not in sys.path:
            sys.path.insert(0, version_dir)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="vllm-bridge-loop")
        self.thread.start()
        self.engine = create_engine(engine_args)
        self.ongoing = 0
        self.lock = threading.Lock()
        self.next_id = 0

    def execute(self, requests):
        for request in requests:
            with self.lock:
                self.ongoing += 1
                self.next_id += 1
                rid = "%s-%d" % (request.request_id() or "warden", self.next_id)
            asyncio.run_coroutine_threadsafe(self.generate(request, rid), self.loop)
        return None

    def _flag(self, request, name, default=False):
        t = pb_utils.get_input_tensor_by_name(request, name)
        return default if t is None else bool(t.as_numpy().reshape(-1)[0])

    def parse(self, request):
        text = pb_utils.get_input_tensor_by_name(request, "text_input").as_numpy().reshape(-1)[0]
        prompt = text.decode("utf-8") if isinstance(text, bytes) else str(text)
        stream = self._flag(request, "stream")
        t = pb_utils.get_input_tensor_by_name(request, "exclude_input_in_output")
        if t is not None:
            exclude = bool(t.as_numpy().reshape(-1)[0])
            if stream and not exclude:
                raise pb_utils.TritonModelException("Streaming with `exclude_input_in_output=False` is not allowed.")
        else:
            exclude = stream
        sp = pb_utils.get_input_tensor_by_name(request, "sampling_parameters")
        if sp is not None:
            raw = sp.as_numpy().reshape(-1)[0]
            params = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        else:
            params = json.loads(request.parameters() or "{}")
        flags = {n: self._flag(request, n) for n in ("return_finish_reason", "return_cumulative_logprob", "return_logprobs", "return_num_input_tokens", "return_num_output_tokens")}
        return prompt, stream, exclude, sampling_from(params), flags

    def response(self, out, prompt, texts, exclude, flags):
        text_output = [t if exclude else prompt + t for t in texts]
        tensors = [pb_utils.Tensor("text_output", np.array([t.encode("utf-8") for t in text_output], dtype=np.object_))]
        if flags["return_finish_reason"]:
            tensors.append(pb_utils.Tensor("finish_reason", np.array([str(r).encode() for r in out["finish_reasons"]], dtype=np.object_)))
        if flags["return_cumulative_logprob"]:
            tensors.append(pb_utils.Tensor("cumulative_logprob", np.array([c if c is not None else 0.0 for c in out["cumulative_logprobs"]], dtype=np.float32)))
        if flags["return_logprobs"]:
            tensors.append(pb_utils.Tensor("logprobs", np.array([json.dumps(l).encode() for l in out["logprobs"]], dtype=np.object_)))
        if flags["return_num_input_tokens"]:
            tensors.append(pb_utils.Tensor("num_input_tokens", np.array([out["num_input_tokens"]], dtype=np.uint32)))
        if flags["return_num_output_tokens"]:
            tensors.append(pb_utils.Tensor("num_output_tokens", np.array(out["num_output_tokens"], dtype=np.uint32)))
        return pb_utils.InferenceResponse(output_tensors=[t for t in tensors if t.name() in self.outputs])

    async def generate(self, request, rid):
        sender = request.get_response_sender()
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        try:
            prompt, stream, exclude, sampling, flags = self.parse(request)
            sent = None  # texts sent so far while streaming
            last = None
            async for out in self.engine.generate(prompt, sampling, rid):
                if request.is_cancelled():
                    await self.engine.abort(rid)
                    sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError("Request was cancelled", pb_utils.TritonError.CANCELLED)), flags=final)
                    return
                last = out
                if stream:
                    prev = sent or [""] * len(out["texts"])
                    deltas = [t[len(p):] for t, p in zip(out["texts"], prev)]
                    sent = list(out["texts"])
                    sender.send(self.response(out, prompt, deltas, True, flags), flags=final if out["finished"] else 0)
            if not stream:
                if last is None:
                    raise pb_utils.TritonModelException("the engine produced no output")
                sender.send(self.response(last, prompt, last["texts"], exclude, flags), flags=final)
            elif last is None or not last["finished"]:
                sender.send(flags=final)
        except Exception as e:
            err = pb_utils.TritonError(
                str(e) if isinstance(e, pb_utils.TritonModelException) else "Error generating stream: %s" % e,
                pb_utils.TritonError.INVALID_ARG if isinstance(e, (pb_utils.TritonModelException, ValueError)) else pb_utils.TritonError.INTERNAL)
            pb_utils.Logger.log_error("vllm bridge: %s" % e)
            try:
                sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("text_output", np.array([b"N/A"], dtype=np.object_))], error=err), flags=final)
            except pb_utils.TritonModelException:
                pass
        finally:
            with self.lock:
                self.ongoing -= 1

    def finalize(self):
        try:
            self.engine.shutdown()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
