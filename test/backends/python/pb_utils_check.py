"""Checks of Warden's triton_python_backend_utils that need no Warden (run by pb-utils.test.ts):
datatype helpers, the BYTES codec, Tensor / DLPack, errors, the response sender's final-flag
rule, ModelConfig's auto-complete setters. Prints one line per passed check."""
import json
import sys

import numpy as np

import triton_python_backend_utils as pb


def check(name, cond):
    if not cond:
        raise AssertionError(name)
    print("ok", name)


# datatypes (spec 7.2)
check("TYPE_FP32", pb.triton_string_to_numpy("TYPE_FP32") is np.float32)
check("TYPE_STRING is object", pb.triton_string_to_numpy("TYPE_STRING") is np.object_)
check("TYPE_BOOL", pb.triton_string_to_numpy("TYPE_BOOL") is np.bool_)
try:
    pb.triton_string_to_numpy("TYPE_BF16")
    check("BF16 has no numpy type", False)
except pb.TritonModelException:
    check("BF16 has no numpy type", True)
check("numpy_to_triton_type int64", pb.numpy_to_triton_type(np.int64) == pb.TYPE_INT64)
check("numpy_to_triton_type bytes", pb.numpy_to_triton_type(np.dtype("S3")) == pb.TYPE_STRING)
check("triton_to_numpy_type FP16", pb.triton_to_numpy_type(pb.TYPE_FP16) is np.float16)

# BYTES codec
arr = np.array([b"", b"abc", "h\u00e9".encode(), b"\x00\x01"], dtype=object)
enc = pb.serialize_byte_tensor(arr)
check("serialize layout", enc.tobytes() == b"\x00\x00\x00\x00" + b"\x03\x00\x00\x00abc" + b"\x03\x00\x00\x00h\xc3\xa9" + b"\x02\x00\x00\x00\x00\x01")
check("deserialize round trip", list(pb.deserialize_bytes_tensor(enc)) == list(arr))
check("serialize str as utf-8", pb.deserialize_bytes_tensor(pb.serialize_byte_tensor(np.array(["x\u00e9"], dtype=object)))[0] == "x\u00e9".encode())
for bad in (b"\x05\x00\x00\x00ab", b"\x01\x00"):
    try:
        pb.deserialize_bytes_tensor(np.frombuffer(bad, np.uint8))
        check("malformed BYTES refused", False)
    except pb.TritonModelException:
        check("malformed BYTES refused", True)

# Tensor
t = pb.Tensor("X", np.arange(6, dtype=np.float32).reshape(2, 3))
check("tensor basics", t.name() == "X" and t.shape() == [2, 3] and t.triton_dtype() == pb.TYPE_FP32 and t.is_cpu())
back = pb.Tensor.from_dlpack("Y", t.to_dlpack())
check("dlpack round trip", np.array_equal(back.as_numpy(), t.as_numpy()) and back.name() == "Y")
check("from_dlpack of an object with __dlpack__", np.array_equal(pb.Tensor.from_dlpack("Z", np.ones(3, np.int16)).as_numpy(), np.ones(3, np.int16)))
s = pb.Tensor("S", np.array(["a", "b"]))
check("unicode arrays become object arrays", s.triton_dtype() == pb.TYPE_STRING and s.as_numpy().dtype == object)
try:
    pb.Tensor("bad", [1, 2])
    check("non-numpy data refused", False)
except pb.TritonModelException:
    check("non-numpy data refused", True)

# errors
e = pb.TritonError("nope", pb.TritonError.NOT_FOUND)
check("error code and message", e.code() == 2 and e.message() == "nope")
check("error default INTERNAL", pb.TritonError("x").code() == pb.TritonError.INTERNAL)
check("error codes", [pb.TritonError.UNKNOWN, pb.TritonError.INVALID_ARG, pb.TritonError.UNAVAILABLE, pb.TritonError.UNSUPPORTED, pb.TritonError.ALREADY_EXISTS, pb.TritonError.CANCELLED] == [0, 3, 4, 5, 6, 7])
r = pb.InferenceResponse(output_tensors=[t], parameters={"a": 1, "b": "x", "c": True})
check("response parameters as JSON", json.loads(r.parameters()) == {"a": 1, "b": "x", "c": True} and not r.has_error())
check("get_output_tensor_by_name", pb.get_output_tensor_by_name(r, "X") is t and pb.get_output_tensor_by_name(r, "nope") is None)


# response sender: one final only (with a stand-in runtime that records sends)
class Recorder:
    def __init__(self):
        self.sent = []

    def send_response(self, rid, response, final):
        self.sent.append((rid, final))

    def is_cancelled(self, rid):
        return rid == 99


pb._runtime = Recorder()
req = pb.InferenceRequest(model_name="m", requested_output_names=["X"], inputs=[t], parameters='{"k": 1}')
req._rid = 7
sender = req.get_response_sender()
check("same sender", sender is req.get_response_sender())
sender.send(r)
sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
try:
    sender.send(r)
    check("send after final refused", False)
except pb.TritonModelException as ex:
    check("send after final refused", "closed" in str(ex))
check("sends recorded", pb._runtime.sent == [(7, False), (7, True)])
try:
    pb.InferenceRequest(model_name="m").get_response_sender()
    check("BLS request has no sender", False)
except pb.TritonModelException:
    check("BLS request has no sender", True)
req2 = pb.InferenceRequest(model_name="m")
req2._rid = 99
check("is_cancelled", req2.is_cancelled() and not req.is_cancelled())
check("request parameters JSON", json.loads(req.parameters()) == {"k": 1})
# a model name given as bytes, as Triton's pybind11 std::string accepts it (BLS requests are JSON)
check("model_name as bytes", pb.InferenceRequest(model_name=b"m", requested_output_names=["X"], inputs=[t]).model_name() == "m")
check("get_input_tensor_by_name", pb.get_input_tensor_by_name(req, "X") is t and pb.get_input_tensor_by_name(req, "Q") is None)

# auto-complete config
mc = pb.ModelConfig({"name": "m", "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}]})
mc.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [2]})
mc.add_input({"name": "B", "data_type": "TYPE_INT32", "dims": [1]})
mc.set_max_batch_size(8)
mc.set_dynamic_batching()
mc.set_model_transaction_policy({"decoupled": True})
d = mc.as_dict()
check("auto-complete setters", [i["name"] for i in d["input"]] == ["A", "B"] and d["max_batch_size"] == 8 and "dynamic_batching" in d and pb.using_decoupled_model_transaction_policy(d))
try:
    mc.add_input({"name": "A", "data_type": "TYPE_INT8", "dims": [2]})
    check("conflicting input refused", False)
except ValueError:
    check("conflicting input refused", True)
try:
    mc.set_max_batch_size(4)
    check("conflicting max_batch_size refused", False)
except ValueError:
    check("conflicting max_batch_size refused", True)
check("get_input_config_by_name", pb.get_input_config_by_name(d, "B")["data_type"] == "TYPE_INT32" and pb.get_output_config_by_name(d, "Y") is None)
# model control (spec 7.2): argument errors are raised before anything is sent, with Triton's text
for name, fn, text in (
    ("load_model files must be a dict", lambda: pb.load_model("m", "{}", files=[b"x"]), "failed to load model 'm', files should be a dictionary of file paths and file contents"),
    ("load_model file contents must be bytes", lambda: pb.load_model("m", "{}", files={"file:1/model.onnx": "text"}), "failed to load model 'm', files should be a dictionary of file paths and file contents"),
    ("is_model_ready version must be an integer", lambda: pb.is_model_ready("m", "one"), "Failed to check model readiness: failed to get model version from specified version string 'one'"),
    ("is_model_ready version must not be negative", lambda: pb.is_model_ready("m", "-2"), "version should be an integral value > 0"),
):
    try:
        fn()
        check(name, False)
    except pb.TritonModelException as e:
        check(name, text in str(e))
print("ALL OK")
sys.stdout.flush()
