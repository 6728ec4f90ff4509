"""Inference statistics (spec §3.2) through tritonclient.http: exact counts after N requests.

Usage: statistics.py --url host:port   (server in explicit mode, `simple` loadable)

`simple` is unloaded and loaded again so its statistics start from zero, then it gets
3 requests of batch 1, 2 of batch 8 and 1 of batch 4, sent one after another (so no two can
share an execution), plus one rejected request of batch 9. Expected: inference_count 23 (batch
elements), execution_count 6, success / queue / compute_* counts 6, batch_stats 1:3, 4:1, 8:2,
and the rejected request counted nowhere among the successes.
"""

import time

import tritonclient.http as httpclient

import example_models as ex
from compat_common import Run, expect_array, expect_eq, expect_server_error, expect_true

run = Run("statistics.py", __doc__)
client = run.client
BATCHES = [1, 8, 1, 4, 8, 1]


def inputs_for(batch, seed, binary):
    inputs, expected = ex.make("simple", batch, seed)
    return ex.input_tensors(httpclient, "simple", inputs, binary), expected


def stats_of(model, version=""):
    s = client.get_inference_statistics(model, version)
    entries = [e for e in s.get("model_stats", []) if e.get("name") == model]
    expect_eq(len(entries), 1, f"number of model_stats entries for {model}")
    return entries[0]


state = {}


@run.case("simple reloaded: statistics start at zero")
def fresh_load():
    client.unload_model("simple")
    run.wait_ready("simple", False)
    client.load_model("simple")
    run.wait_ready("simple", True)
    st = stats_of("simple")
    run.observe("stats_after_load", st)
    expect_eq(st.get("version"), "1", "version")
    expect_eq(st.get("inference_count"), 0, "inference_count after load")
    expect_eq(st.get("execution_count"), 0, "execution_count after load")
    expect_eq(st.get("last_inference"), 0, "last_inference after load")
    expect_eq(st["inference_stats"]["success"]["count"], 0, "success.count after load")


@run.case("6 requests (batch 1,8,1,4,8,1) + 1 rejected, exact results")
def run_requests():
    state["t0"] = int(time.time() * 1000)
    for i, batch in enumerate(BATCHES):
        tensors, expected = inputs_for(batch, 20 + i, i % 2 == 0)
        result = client.infer("simple", tensors)
        for n in ("OUTPUT0", "OUTPUT1"):
            expect_array(result.as_numpy(n), expected[n], f"request {i} {n}")
    tensors, _ = inputs_for(9, 0, True)
    expect_server_error(lambda: client.infer("simple", tensors), "400", what="batch 9")
    state["t1"] = int(time.time() * 1000)


@run.case("inference / execution counts exact")
def counts():
    st = stats_of("simple")
    run.observe("stats_after_requests", st)
    n = len(BATCHES)
    expect_eq(st.get("inference_count"), sum(BATCHES), "inference_count (batch elements)")
    expect_eq(st.get("execution_count"), n, "execution_count")
    inf = st["inference_stats"]
    for key in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
        expect_eq(inf[key]["count"], n, f"inference_stats.{key}.count")
    for key in ("success", "compute_infer"):
        expect_true(inf[key]["ns"] > 0, f"inference_stats.{key}.ns must be > 0, got {inf[key]['ns']}")
    expect_true(
        inf["success"]["ns"] >= inf["compute_infer"]["ns"],
        f"success.ns ({inf['success']['ns']}) < compute_infer.ns ({inf['compute_infer']['ns']})",
    )
    last = st.get("last_inference")
    expect_true(
        state["t0"] - 1000 <= last <= state["t1"] + 1000,
        f"last_inference {last} ms not within the request window [{state['t0']}, {state['t1']}]",
    )


@run.case("batch_stats per batch size")
def batch_stats():
    st = stats_of("simple")
    by_size = {b["batch_size"]: b["compute_infer"]["count"] for b in st.get("batch_stats", [])}
    want = {}
    for b in BATCHES:
        want[b] = want.get(b, 0) + 1
    expect_eq(by_size, want, "batch_stats compute_infer counts by batch_size")


@run.case("all-model and per-version statistics")
def all_models_and_version():
    everything = client.get_inference_statistics()
    names = [e.get("name") for e in everything.get("model_stats", [])]
    expect_true("simple" in names, f"simple missing from all-model statistics: {names}")
    st = stats_of("simple", "1")
    expect_eq(st.get("inference_count"), sum(BATCHES), "inference_count via /versions/1/stats")


@run.case("statistics of an unknown model")
def unknown_model():
    expect_server_error(
        lambda: client.get_inference_statistics("no_such_model"),
        "400",
        message="requested model 'no_such_model' is not available",
        what="statistics of an unknown model",
    )


run.finish()
