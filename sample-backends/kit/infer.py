#!/usr/bin/env python3
"""Sends a KServe v2 JSON request body (default input.json) to {{name}} on a Warden server with
tritonclient, as a tenant: the client unchanged, the tenant's token in an Authorization header.

Usage: python3 infer.py --url http://HOST:8000 --token "$WARDEN_TOKEN" [--model {{name}}] [--input input.json]

Prints each output as JSON on one line: {"OUTPUT0": [...]}. Needs `pip install tritonclient[http]`.
"""

import argparse
import json
import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException, triton_to_np_dtype

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--url", required=True, help="the server's HTTP endpoint, http://host:port or host:port")
parser.add_argument("--token", required=True, help="the tenant's bearer token")
parser.add_argument("--model", default="{{name}}")
parser.add_argument("--input", default="input.json", help="a KServe v2 JSON request body")
args = parser.parse_args()

with open(args.input) as f:
    body = json.load(f)
inputs = []
for i in body["inputs"]:
    tensor = httpclient.InferInput(i["name"], i["shape"], i["datatype"])
    tensor.set_data_from_numpy(np.array(i["data"], dtype=triton_to_np_dtype(i["datatype"])).reshape(i["shape"]))
    inputs.append(tensor)

url = args.url.removeprefix("http://").rstrip("/")
client = httpclient.InferenceServerClient(url)
try:
    result = client.infer(args.model, inputs, headers={"Authorization": f"Bearer {args.token}"})
except InferenceServerException as e:
    print(f"error: {e.message()}", file=sys.stderr)
    sys.exit(1)
outputs = {o["name"]: result.as_numpy(o["name"]).tolist() for o in result.get_response()["outputs"]}
print(json.dumps(outputs))
