"""Error cases through tritonclient.http: InferenceServerException status and message.

Usage: errors.py --url host:port

Statuses and messages follow Triton (spec §1.2, §5.4). After the bad requests the server must be
unchanged: `simple` still ready and still computing exact results.
"""

import numpy as np
import tritonclient.http as httpclient

import example_models as ex
from compat_common import Run, expect_array, expect_eq, expect_server_error

run = Run("errors.py", __doc__)
client = run.client


def int_inputs(shape, dtype=np.int32, datatype="INT32", names=("INPUT0", "INPUT1")):
    out = []
    for n in names:
        t = httpclient.InferInput(n, list(shape), datatype)
        t.set_data_from_numpy(np.ones(shape, dtype=dtype))
        out.append(t)
    return out


@run.case("unknown model: infer")
def unknown_model_infer():
    expect_server_error(
        lambda: client.infer("no_such_model", int_inputs((1, 16))),
        "404",
        message="Request for unknown model: 'no_such_model' is not found",
        what="infer on an unknown model",
    )


@run.case("unknown model: metadata / ready")
def unknown_model_metadata():
    expect_server_error(
        lambda: client.get_model_metadata("no_such_model"),
        "404",
        message="Request for unknown model: 'no_such_model' is not found",
        what="metadata of an unknown model",
    )
    expect_eq(client.is_model_ready("no_such_model"), False, "is_model_ready('no_such_model')")


@run.case("unknown version: infer")
def unknown_version():
    expect_server_error(
        lambda: client.infer("simple", int_inputs((1, 16)), model_version="7"),
        "404",
        message="Request for unknown model: 'simple' version 7 is not found",
        what="infer on simple version 7",
    )


@run.case("wrong datatype")
def wrong_datatype():
    expect_server_error(
        lambda: client.infer("simple", int_inputs((1, 16), np.float32, "FP32")),
        "400",
        message="[request id: <id_unknown>] inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'",
        what="FP32 inputs to simple",
    )


@run.case("wrong shape")
def wrong_shape():
    expect_server_error(
        lambda: client.infer("simple", int_inputs((1, 8))),
        "400",
        contains="unexpected shape for input 'INPUT0' for model 'simple'. Expected [-1,16], got [1,8]",
        what="[1,8] inputs to simple",
    )


@run.case("missing input")
def missing_input():
    expect_server_error(
        lambda: client.infer("simple", int_inputs((1, 16), names=("INPUT0",))),
        "400",
        contains="expected 2 inputs but got 1 inputs for model 'simple'",
        what="simple with only INPUT0",
    )


@run.case("unknown requested output")
def unknown_output():
    inputs = int_inputs((1, 16))
    outputs = [httpclient.InferRequestedOutput("OUTPUT9")]
    expect_server_error(
        lambda: client.infer("simple", inputs, outputs=outputs),
        "400",
        contains="unexpected inference output 'OUTPUT9' for model 'simple'",
        what="simple with requested output OUTPUT9",
    )


@run.case("server unchanged after errors")
def still_serving():
    expect_eq(client.is_model_ready("simple"), True, "simple ready after the bad requests")
    inputs, expected = ex.make("simple", 2, 9)
    result = client.infer("simple", ex.input_tensors(httpclient, "simple", inputs))
    for n in ("OUTPUT0", "OUTPUT1"):
        expect_array(result.as_numpy(n), expected[n], f"simple {n} after the bad requests")


run.finish()
