# Written for Warden's tests in the style Triton's Python backend documents: BLS into another
# Python model. Each request is forwarded to `tp_add_sub` (FP32 [4]) through
# pb_utils.InferenceRequest.exec(); an error from tp_add_sub (e.g. a shape it refuses) becomes this
# request's error, with the callee's text. Both servers can serve it (no ONNX Runtime needed).
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            answer = pb_utils.InferenceRequest(
                model_name="tp_add_sub",
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[
                    pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                    pb_utils.get_input_tensor_by_name(request, "INPUT1"),
                ],
            ).exec()
            if answer.has_error():
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(answer.error().message())))
                continue
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.get_output_tensor_by_name(answer, "OUTPUT0"),
                        pb_utils.get_output_tensor_by_name(answer, "OUTPUT1"),
                    ]
                )
            )
        return responses
