"""The engine boundary of Warden's vLLM bridge (model.py): everything the bridge needs of an LLM
engine, and its implementation on vLLM's async engine.

An engine is an object with

    async def generate(prompt: str, sampling: dict, request_id: str) -> AsyncIterator[Output]
    async def abort(request_id: str) -> None
    def shutdown() -> None

where each ``Output`` (a dict) is the state of the request so far, cumulative as vLLM's
``RequestOutput`` is:

    {"texts": [str, ...],              # one text per choice (sampling "n"), cumulative
     "finish_reasons": [str|None, ...],
     "cumulative_logprobs": [float|None, ...],
     "logprobs": [list|None, ...],     # per choice: per token {token_id: {"logprob", "rank", "decoded_token"}}
     "num_input_tokens": int,
     "num_output_tokens": [int, ...],
     "finished": bool}

``create_engine(engine_args)`` builds the engine from ``1/model.json``: when it names
``"engine_factory": "module:function"`` (Warden's extension; module imported from the model's
version directory), that factory is called with the remaining arguments; otherwise vLLM's
``AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**engine_args))``.
"""
import importlib


class VllmEngine:
    """The engine boundary on vLLM's AsyncLLMEngine (needs ``vllm``; a GPU host)."""

    def __init__(self, engine_args):
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.engine.async_llm_engine import AsyncLLMEngine

        self._engine = AsyncLLMEngine.from_engine_args(AsyncEngineArgs(**engine_args))

    async def generate(self, prompt, sampling, request_id):
        from vllm import SamplingParams

        async for out in self._engine.generate(prompt, SamplingParams(**sampling), request_id):
            yield {
                "texts": [o.text for o in out.outputs],
                "finish_reasons": [o.finish_reason for o in out.outputs],
                "cumulative_logprobs": [o.cumulative_logprob for o in out.outputs],
                "logprobs": [
                    None if o.logprobs is None else [
                        {str(t): {"logprob": lp.logprob, "rank": lp.rank, "decoded_token": lp.decoded_token} for t, lp in step.items()}
                        for step in o.logprobs
                    ]
                    for o in out.outputs
                ],
                "num_input_tokens": len(out.prompt_token_ids or []),
                "num_output_tokens": [len(o.token_ids) for o in out.outputs],
                "finished": out.finished,
            }

    async def abort(self, request_id):
        await self._engine.abort(request_id)

    def shutdown(self):
        shutdown = getattr(self._engine, "shutdown_background_loop", None)
        if shutdown:
            shutdown()


def create_engine(engine_args):
    args = dict(engine_args)
    factory = args.pop("engine_factory", None)
    if factory:
        module_name, _, fn = factory.partition(":")
        return getattr(importlib.import_module(module_name), fn or "create_engine")(args)
    return VllmEngine(args)
