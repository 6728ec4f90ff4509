"""bls_python: calls `simple` (or the model named by the request parameter `bls_model`) with its
inputs through BLS and returns that model's OUTPUT0 / OUTPUT1. Request parameter `bls_mode`:
"sync" (default, exec()), "async" (async_exec()) or "decoupled" (exec(decoupled=True), keeping the
last response with outputs)."""
import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            params = json.loads(request.parameters())
            target = params.get("bls_model", "simple")
            mode = params.get("bls_mode", "sync")
            bls = pb_utils.InferenceRequest(
                model_name=target,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[pb_utils.get_input_tensor_by_name(request, "INPUT0"), pb_utils.get_input_tensor_by_name(request, "INPUT1")],
            )
            if mode == "async":
                result = await bls.async_exec()
            elif mode == "decoupled":
                result = None
                for r in bls.exec(decoupled=True):
                    if r.has_error() or r.output_tensors():
                        result = r
                if result is None:
                    result = pb_utils.InferenceResponse(error=pb_utils.TritonError("no response"))
            else:
                result = bls.exec()
            if result.has_error():
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("BLS call to '%s' failed: %s" % (target, result.error().message()), result.error().code())))
                continue
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", pb_utils.get_output_tensor_by_name(result, "OUTPUT0").as_numpy()),
                pb_utils.Tensor("OUTPUT1", pb_utils.get_output_tensor_by_name(result, "OUTPUT1").as_numpy()),
            ]))
        return responses
