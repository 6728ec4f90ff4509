"""MLServer custom runtime for the benchmark's peer (bench/mlserver.ts): serves an ONNX file through
onnxruntime's CPU provider, one intra-op and one inter-op thread (as Warden's onnxruntime backend),
speaking the KServe v2 protocol MLServer provides. `parameters.uri` is the .onnx file."""
import numpy as np
import onnxruntime as ort
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse


class OnnxRuntimeModel(MLModel):
    async def load(self) -> bool:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(self.settings.parameters.uri, options, providers=["CPUExecutionProvider"])
        self._outputs = [o.name for o in self._session.get_outputs()]
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        feeds = {i.name: np.ascontiguousarray(NumpyCodec.decode_input(i)) for i in payload.inputs}
        names = [o.name for o in payload.outputs] if payload.outputs else self._outputs
        results = self._session.run(names, feeds)
        return InferenceResponse(
            model_name=self.name,
            outputs=[NumpyCodec.encode_output(name, value) for name, value in zip(names, results)],
        )
