#!/usr/bin/env python3
"""Export Triton's public gRPC service definition from a registry package.

The FileDescriptorProtos of `model_config.proto` and `grpc_service.proto` that protoc compiled
into PyPI `tritonclient[grpc]`'s generated modules (`tritonclient/grpc/*_pb2.py`) are written, as
they are, into one FileDescriptorSet (`grpc_service.protoset`) that Warden's gRPC frontend loads
with @grpc/proto-loader. `provenance.json` names the package, its version and the sha256 of each
source module (as the wheel's RECORD lists it) and of the descriptor set.

    .venv/bin/python scripts/export-triton-protos.py          # (re)write third_party/triton-grpc-protos/
    .venv/bin/python scripts/export-triton-protos.py --check  # exit 1 unless the committed files match

Run with the compat suite's venv (test/compat/venv.ts installs tritonclient[http,grpc]).
"""
import base64
import hashlib
import importlib.metadata as md
import json
import os
import sys

from google.protobuf import descriptor_pb2
import tritonclient.grpc.model_config_pb2 as model_config_pb2
import tritonclient.grpc.service_pb2 as service_pb2

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "third_party", "triton-grpc-protos")
MODULES = [("tritonclient/grpc/model_config_pb2.py", model_config_pb2), ("tritonclient/grpc/service_pb2.py", service_pb2)]


def record_sha256(dist, path):
    """The sha256 (hex) the wheel's RECORD gives for `path`."""
    for f in dist.files or []:
        if str(f) == path and f.hash is not None and f.hash.mode == "sha256":
            return base64.urlsafe_b64decode(f.hash.value + "=" * (-len(f.hash.value) % 4)).hex()
    raise SystemExit(f"{path} is not in tritonclient's RECORD")


def build():
    dist = md.distribution("tritonclient")
    fds = descriptor_pb2.FileDescriptorSet()
    sources = []
    for path, module in MODULES:
        fds.file.append(descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb))
        actual = hashlib.sha256(open(module.__file__, "rb").read()).hexdigest()
        recorded = record_sha256(dist, path)
        if actual != recorded:
            raise SystemExit(f"{path}: installed file sha256 {actual} differs from the wheel's RECORD {recorded}")
        sources.append({"module": path, "proto": module.DESCRIPTOR.name, "sha256": recorded})
    data = fds.SerializeToString(deterministic=True)
    provenance = {
        "package": "tritonclient[grpc]",
        "registry": "PyPI",
        "version": dist.version,
        "license": dist.metadata.get("License-Expression") or dist.metadata.get("License"),
        "sources": sources,
        "protoset": {"file": "grpc_service.protoset", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
        "regenerate": ".venv/bin/python scripts/export-triton-protos.py",
    }
    return data, (json.dumps(provenance, indent=2) + "\n").encode()


def main():
    data, prov = build()
    files = {"grpc_service.protoset": data, "provenance.json": prov}
    if "--check" in sys.argv[1:]:
        bad = []
        for name, want in files.items():
            p = os.path.join(OUT, name)
            have = open(p, "rb").read() if os.path.exists(p) else None
            if have != want:
                bad.append(name)
        print(json.dumps({"match": not bad, "differs": bad}))
        sys.exit(1 if bad else 0)
    os.makedirs(OUT, exist_ok=True)
    for name, content in files.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(content)
    print(f"wrote {', '.join(files)} to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
