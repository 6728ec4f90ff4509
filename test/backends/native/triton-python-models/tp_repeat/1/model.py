# Written for Warden's tests in the style Triton's Python backend documents: a decoupled model that
# sends one response per element of IN (OUT = [element], IDX = [position]), then an empty final
# response flagged TRITONSERVER_RESPONSE_COMPLETE_FINAL.
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
            for i, v in enumerate(values.reshape(-1)):
                sender.send(
                    pb_utils.InferenceResponse(
                        output_tensors=[
                            pb_utils.Tensor("OUT", np.array([v], dtype=np.int32)),
                            pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32)),
                        ]
                    )
                )
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
