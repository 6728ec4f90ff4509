"""The component's entry module (`componentize-py ... componentize app`).

The sandbox gives a component no WASI at all here: the build stubs every WASI import
(`--stub-wasi`; files and sockets are not in the sandbox world), so Python's own stdout and
stderr would trap. They are sent to the model's log through `host.log` instead, one line per
`print`, stderr as warnings.
"""

import sys

from wit_world import exports
from wit_world.imports import host

import backend  # noqa: F401  (the exported resources: componentize-py finds them by this name)


class _HostLog:
    """A text stream whose lines go to the model's log."""

    def __init__(self, level):
        self.level = level
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            host.log(self.level, line)
        return len(text)

    def flush(self) -> None:
        if self.pending:
            host.log(self.level, self.pending)
            self.pending = ""


sys.stdout = _HostLog(host.LogLevel.INFO)
sys.stderr = _HostLog(host.LogLevel.WARN)


class Backend(exports.Backend):
    """The exported interface `backend`: its resources live in backend.py."""
