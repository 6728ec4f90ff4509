"""repeat_python: decoupled. For each request, one response per element of IN (OUT = IN[i],
IDX = i), each after DELAY[i] ms, then the final flag alone; execute itself returns after WAIT ms.
Responses are sent from a thread, so execute may return before they are all sent. A cancelled
request gets a CANCELLED error and the final flag."""
import threading
import time

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        if not pb_utils.using_decoupled_model_transaction_policy(__import__("json").loads(args["model_config"])):
            raise pb_utils.TritonModelException("repeat_python must be decoupled")
        self.threads = []

    def execute(self, requests):
        wait = 0
        for request in requests:
            ins = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().copy()
            delays = pb_utils.get_input_tensor_by_name(request, "DELAY").as_numpy().copy()
            wait = max(wait, int(pb_utils.get_input_tensor_by_name(request, "WAIT").as_numpy()[0]))
            t = threading.Thread(target=self.respond, args=(request, ins, delays), daemon=True)
            t.start()
            self.threads.append(t)
        time.sleep(wait / 1000.0)
        return None

    def respond(self, request, ins, delays):
        sender = request.get_response_sender()
        for i, v in enumerate(ins):
            delay = int(delays[i]) if i < len(delays) else 0
            deadline = time.monotonic() + delay / 1000.0
            while time.monotonic() < deadline:
                if sender.is_cancelled():
                    break
                time.sleep(min(0.005, max(0.0, deadline - time.monotonic())))
            if sender.is_cancelled():
                sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError("request cancelled", pb_utils.TritonError.CANCELLED)),
                            flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return
            out = pb_utils.Tensor("OUT", np.array([v], dtype=np.int32))
            idx = pb_utils.Tensor("IDX", np.array([i], dtype=np.uint32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[out, idx]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        for t in self.threads:
            t.join(timeout=5)
