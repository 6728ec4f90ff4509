"""Health, server metadata, and per-model metadata / config / readiness through tritonclient.http.

Usage: health_metadata.py --url host:port --models simple,... [--unavailable a,b]
                          [--expect-ready true|false]

Model metadata is compared exactly with what Triton returns for these configs (spec §1.5);
the model config is checked on the fields Triton's normalisation fixes (spec §1.7, §5.3-5.5)
and returned whole in `observed` for the vitest side.
"""

import example_models as ex
from compat_common import Run, expect_eq, expect_true


def _args(p):
    p.add_argument("--expect-ready", choices=("true", "false"), help="expected is_server_ready()")
    p.add_argument("--unavailable", default="", help="models that must not be ready")


run = Run("health_metadata.py", __doc__, _args)
client = run.client
models = [m for m in run.args.models.split(",") if m]
unavailable = [m for m in run.args.unavailable.split(",") if m]
expect_ready = None if run.args.expect_ready is None else run.args.expect_ready == "true"

CONFIG_TYPE = {"INT32": "TYPE_INT32", "INT8": "TYPE_INT8", "FP32": "TYPE_FP32", "BYTES": "TYPE_STRING"}


def expected_metadata(model):
    dt = ex.ALL[model]
    shape = [-1, 16] if ex.MAX_BATCH[model] > 0 else [16]
    return {
        "name": model,
        "versions": ["1"],
        "platform": "onnxruntime_onnx",
        "inputs": [{"name": n, "datatype": dt, "shape": shape} for n in ("INPUT0", "INPUT1")],
        "outputs": [{"name": n, "datatype": dt, "shape": shape} for n in ("OUTPUT0", "OUTPUT1")],
    }


def health():
    expect_eq(client.is_server_live(), True, "is_server_live()")


def readiness():
    expect_eq(client.is_server_ready(), expect_ready, "is_server_ready()")


def server_metadata():
    md = client.get_server_metadata()
    run.observe("server_metadata", md)
    expect_true(isinstance(md.get("name"), str) and md["name"], f"server name missing: {md!r}")
    expect_true(isinstance(md.get("version"), str) and md["version"], f"server version missing: {md!r}")
    ext = md.get("extensions")
    expect_true(isinstance(ext, list), f"extensions is not a list: {ext!r}")
    for needed in ("binary_tensor_data", "model_repository", "statistics", "model_configuration"):
        expect_true(needed in ext, f"extension {needed!r} not advertised: {ext!r}")


def metadata_case(model):
    def fn():
        md = client.get_model_metadata(model)
        run.observe(f"metadata:{model}", md)
        expect_eq(md, expected_metadata(model), f"{model} metadata")
        md1 = client.get_model_metadata(model, model_version="1")
        expect_eq(md1, expected_metadata(model), f"{model} metadata for version 1")

    return fn


def config_case(model):
    def fn():
        cfg = client.get_model_config(model)
        run.observe(f"config:{model}", cfg)
        dt = CONFIG_TYPE[ex.ALL[model]]
        expect_eq(cfg.get("name"), model, "config name")
        expect_eq(cfg.get("platform"), "onnxruntime_onnx", "config platform")
        expect_eq(cfg.get("backend"), "onnxruntime", "config backend")
        expect_eq(cfg.get("max_batch_size"), ex.MAX_BATCH[model], "config max_batch_size")
        expect_eq(cfg.get("version_policy"), {"latest": {"num_versions": 1}}, "config version_policy")
        expect_eq(cfg.get("default_model_filename"), "model.onnx", "config default_model_filename")
        for key, names in (("input", ("INPUT0", "INPUT1")), ("output", ("OUTPUT0", "OUTPUT1"))):
            tensors = cfg.get(key)
            expect_eq([t.get("name") for t in tensors], list(names), f"config {key} names")
            for t in tensors:
                expect_eq(t.get("data_type"), dt, f"config {key} {t['name']} data_type")
                expect_eq(t.get("dims"), [16], f"config {key} {t['name']} dims")
                expect_eq(t.get("is_shape_tensor"), False, f"config {key} {t['name']} is_shape_tensor")
                if key == "input":
                    expect_eq(t.get("format"), "FORMAT_NONE", f"config input {t['name']} format")
                    expect_eq(t.get("optional"), False, f"config input {t['name']} optional")
                    expect_eq(t.get("allow_ragged_batch"), False, f"config input {t['name']} allow_ragged_batch")
                else:
                    expect_eq(t.get("label_filename"), "", f"config output {t['name']} label_filename")
        groups = cfg.get("instance_group")
        expect_true(isinstance(groups, list) and len(groups) >= 1, f"instance_group missing: {groups!r}")
        for g in groups:
            expect_eq(g.get("kind"), "KIND_CPU", "instance_group kind (no GPU used)")
            expect_true(isinstance(g.get("count"), int) and g["count"] >= 1, f"instance count: {g!r}")

    return fn


def ready_case(model):
    def fn():
        expect_eq(client.is_model_ready(model), True, f"is_model_ready({model!r})")
        expect_eq(client.is_model_ready(model, "1"), True, f"is_model_ready({model!r}, '1')")
        expect_eq(client.is_model_ready(model, "2"), False, f"is_model_ready({model!r}, '2')")

    return fn


def not_ready_case(model):
    def fn():
        expect_eq(client.is_model_ready(model), False, f"is_model_ready({model!r})")

    return fn


run.case("is_server_live", health)
if expect_ready is not None:
    run.case(f"is_server_ready is {expect_ready}", readiness)
run.case("server metadata", server_metadata)
for m in models:
    run.case(f"{m}: model metadata", metadata_case(m))
    run.case(f"{m}: model config", config_case(m))
    run.case(f"{m}: model ready", ready_case(m))
for m in unavailable:
    run.case(f"{m}: not ready", not_ready_case(m))
run.finish()
