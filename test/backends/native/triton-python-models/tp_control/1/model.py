# Written for Warden's tests in the style Triton's Python backend documents: model control from a
# model. OP is "ready", "load" or "unload"; MODEL names the target. READY is
# pb_utils.is_model_ready(MODEL) after the operation. A failed load/unload is this request's error.
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            op = pb_utils.get_input_tensor_by_name(request, "OP").as_numpy().reshape(-1)[0].decode()
            name = pb_utils.get_input_tensor_by_name(request, "MODEL").as_numpy().reshape(-1)[0].decode()
            try:
                if op == "load":
                    pb_utils.load_model(model_name=name)
                elif op == "unload":
                    pb_utils.unload_model(model_name=name)
                elif op != "ready":
                    raise pb_utils.TritonModelException("unknown OP " + op)
                ready = pb_utils.is_model_ready(model_name=name)
            except Exception as e:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))))
                continue
            responses.append(
                pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("READY", np.array([ready], dtype=np.bool_))])
            )
        return responses
