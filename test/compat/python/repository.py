"""Model repository extension (spec §3.1) through tritonclient.http, server in explicit mode.

Usage: repository.py --url host:port --repo <model repository dir>
(the server must have been started with no model loaded)

Index before/after load and unload, load / reload, load with a config override, load with a
file override (`files={"file:1/model.onnx": ...}`) replacing a model and creating a new one,
a file override without config (rejected, nothing changes), and unload semantics.
"""

import json
import os

import numpy as np
import tritonclient.http as httpclient

import example_models as ex
from compat_common import (
    Run,
    expect_array,
    expect_eq,
    expect_server_error,
    expect_true,
)

run = Run("repository.py", __doc__)
client = run.client
repo = run.args.repo
EXAMPLES = ["simple", "simple_string", "simple_int8", "addsub_onnx"]


def read_model(model):
    with open(os.path.join(repo, model, "1", "model.onnx"), "rb") as f:
        return f.read()


def config_json(name, datatype, max_batch_size):
    def tensors(names):
        return [{"name": n, "data_type": datatype, "dims": [16]} for n in names]

    return json.dumps(
        {
            "name": name,
            "platform": "onnxruntime_onnx",
            "max_batch_size": max_batch_size,
            "input": tensors(["INPUT0", "INPUT1"]),
            "output": tensors(["OUTPUT0", "OUTPUT1"]),
        }
    )


def index_entries():
    idx = client.get_model_repository_index()
    expect_true(isinstance(idx, list), f"index is not a list: {idx!r}")
    return idx


def entry(idx, model):
    found = [e for e in idx if e.get("name") == model]
    expect_eq(len(found), 1, f"index entries named {model!r}")
    return found[0]


def infer_exact(served_as, model_kind, batch, seed=0):
    """Infer on `served_as` with inputs of example `model_kind`; outputs must be exact."""
    inputs, expected = ex.make(model_kind, batch, seed)
    result = client.infer(served_as, ex.input_tensors(httpclient, model_kind, inputs))
    for n in ("OUTPUT0", "OUTPUT1"):
        expect_array(result.as_numpy(n), expected[n], f"{served_as} {n}")


def int32_request(model, batch):
    tensors = []
    for n in ("INPUT0", "INPUT1"):
        t = httpclient.InferInput(n, [batch, 16], "INT32")
        t.set_data_from_numpy(np.ones((batch, 16), dtype=np.int32))
        tensors.append(t)
    return lambda: client.infer(model, tensors)


@run.case("index before any load")
def index_before_load():
    """Every model directory of the repository is listed, by name only (never loaded)."""
    idx = index_entries()
    run.observe("index_before_load", idx)
    on_disk = sorted(
        d for d in os.listdir(repo) if os.path.isfile(os.path.join(repo, d, "config.pbtxt"))
    )
    for m in EXAMPLES:
        expect_true(m in on_disk, f"example model {m} missing from {repo}")
    expect_eq(sorted(e.get("name") for e in idx), on_disk, "index names vs model directories")
    for m in on_disk:
        expect_eq(entry(idx, m), {"name": m}, f"index entry of never-loaded {m}")


@run.case("load simple")
def load_simple():
    expect_eq(client.is_model_ready("simple"), False, "simple ready before load")
    client.load_model("simple")
    expect_eq(client.is_model_ready("simple"), True, "simple ready right after load returned")
    idx = index_entries()
    run.observe("index_after_load", idx)
    expect_eq(entry(idx, "simple"), {"name": "simple", "version": "1", "state": "READY"}, "index entry")
    infer_exact("simple", "simple", 8)


@run.case("load with config override (max_batch_size 4)")
def config_override():
    client.load_model("simple", config=config_json("simple", "TYPE_INT32", 4))
    expect_eq(client.is_model_ready("simple"), True, "simple ready after override load")
    cfg = client.get_model_config("simple")
    expect_eq(cfg.get("max_batch_size"), 4, "max_batch_size after config override")
    infer_exact("simple", "simple", 4)
    expect_server_error(
        int32_request("simple", 5),
        "400",
        message="[request id: <id_unknown>] inference request batch-size must be <= 4 for 'simple'",
        what="batch 5 after max_batch_size override 4",
    )


@run.case("load without override reverts to config.pbtxt")
def reload_from_repository():
    client.load_model("simple")
    cfg = client.get_model_config("simple")
    expect_eq(cfg.get("max_batch_size"), 8, "max_batch_size after plain reload (config.pbtxt again)")
    infer_exact("simple", "simple", 8)


@run.case("file override without config is rejected, model unchanged")
def files_without_config():
    e = expect_server_error(
        lambda: client.load_model("simple", files={"file:1/model.onnx": read_model("simple_int8")}),
        "400",
        contains="failed to load 'simple'",
        what="file override without config",
    )
    run.observe("files_without_config_message", e.message())
    expect_eq(client.is_model_ready("simple"), True, "simple still ready after the rejected load")
    infer_exact("simple", "simple", 2)


@run.case("file override replaces simple with the INT8 model, then reverts")
def file_override_replaces():
    client.load_model(
        "simple",
        config=config_json("simple", "TYPE_INT8", 8),
        files={"file:1/model.onnx": read_model("simple_int8")},
    )
    md = client.get_model_metadata("simple")
    expect_eq([i["datatype"] for i in md["inputs"]], ["INT8", "INT8"], "simple input datatypes after file override")
    infer_exact("simple", "simple_int8", 3)
    expect_server_error(
        int32_request("simple", 1),
        "400",
        message="[request id: <id_unknown>] inference input 'INPUT0' data-type is 'INT32', but model 'simple' expects 'INT8'",
        what="INT32 request to the overridden (INT8) simple",
    )
    client.load_model("simple")
    infer_exact("simple", "simple", 3)


@run.case("file override creates a new model simple_uploaded")
def file_override_new_model():
    client.load_model(
        "simple_uploaded",
        config=config_json("simple_uploaded", "TYPE_INT32", 8),
        files={"file:1/model.onnx": read_model("simple")},
    )
    expect_eq(client.is_model_ready("simple_uploaded"), True, "simple_uploaded ready")
    infer_exact("simple_uploaded", "simple", 5)
    md = client.get_model_metadata("simple_uploaded")
    expect_eq(md.get("name"), "simple_uploaded", "metadata name")
    client.unload_model("simple_uploaded")
    run.wait_ready("simple_uploaded", False)


@run.case("unload simple")
def unload_simple():
    client.unload_model("simple")
    run.wait_ready("simple", False)
    idx = index_entries()
    run.observe("index_after_unload", idx)
    expect_eq(
        entry(idx, "simple"),
        {"name": "simple", "version": "1", "state": "UNAVAILABLE", "reason": "unloaded"},
        "index entry after unload",
    )
    expect_server_error(
        int32_request("simple", 1),
        "404",
        message="Request for unknown model: 'simple' has no available versions",
        what="infer on unloaded simple",
    )


@run.case("unload of a never-loaded model succeeds")
def unload_never_loaded():
    client.unload_model("simple_int8")
    expect_eq(client.is_model_ready("simple_int8"), False, "simple_int8 ready")


@run.case("load of a model missing from the repository fails")
def load_missing():
    e = expect_server_error(
        lambda: client.load_model("no_such_model"),
        "500",
        message="failed to load 'no_such_model', failed to poll from model repository",
        what="load of a model not in the repository",
    )
    run.observe("load_missing_message", e.message())


@run.case("load the four example models")
def load_all_examples():
    for m in ("simple", "simple_string", "simple_int8", "addsub_onnx"):
        client.load_model(m)
        expect_eq(client.is_model_ready(m), True, f"{m} ready")
    idx = index_entries()
    for m in ("simple", "simple_string", "simple_int8", "addsub_onnx"):
        expect_eq(entry(idx, m), {"name": m, "version": "1", "state": "READY"}, f"index entry of {m}")
    infer_exact("simple_string", "simple_string", 2)
    infer_exact("addsub_onnx", "addsub_onnx", None)


run.finish()
