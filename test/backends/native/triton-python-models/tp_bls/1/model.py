# Written for Warden's tests in the style Triton's Python backend documents: BLS. Each request is
# forwarded to the ONNX model `simple` through pb_utils.InferenceRequest.exec() and its two
# outputs are returned; an error from `simple` becomes this request's error.
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            call = pb_utils.InferenceRequest(
                model_name="simple",
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[
                    pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                    pb_utils.get_input_tensor_by_name(request, "INPUT1"),
                ],
            )
            answer = call.exec()
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
