"""Fault injection for crash tests: ``fault_point(name)`` kills the process (SIGKILL) when the environment
variable ``WOLF_FAULT_POINT`` names that point.

Production code marks the places where a crash is most dangerous (between the writes of a multi-step
commit); ``tests/freki/ingest/test_crash_points.py`` starts a real server with the variable set, lets it die
there, restarts it and checks the index is consistent. Unset (always, outside such tests), a point costs
one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "WOLF_FAULT_POINT"


def fault_point(name: str) -> None:
    """Die here, as ``kill -9`` would, if ``WOLF_FAULT_POINT`` equals ``name``."""
    if os.environ.get(ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
