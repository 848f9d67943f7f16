"""What ``<service> serve`` sets up before it serves: the OpenMP wait policy of the process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SERVE_AND_REPORT = """
import os, sys
from geri.settings import GeriSettings
from wolf_service.startup import run_server
sys.exit(run_server("geri", GeriSettings, None, {"port": 0},
                    lambda settings, source: print(os.environ.get("OMP_WAIT_POLICY"))))
"""


def _policy_seen_by_serve(env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", SERVE_AND_REPORT], env=env, capture_output=True, text=True,
                          timeout=120, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_serve_makes_openmp_threads_sleep_unless_the_operator_chose(given: str | None, expected: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    assert _policy_seen_by_serve(env) == expected


INTERRUPTED_AGAIN = """
import sys
from geri.settings import GeriSettings
from wolf_service.startup import run_server

def serve(settings, source):
    raise KeyboardInterrupt  # what a second SIGINT raises (wolf_service.serving.StopSignals)

sys.exit(run_server("geri", GeriSettings, None, {"port": 0}, serve))
"""


def test_a_second_interrupt_ends_serve_with_one_line_and_exit_130() -> None:
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_AGAIN], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130
    assert done.stderr.strip() == "geri: interrupted again, stopped without waiting for in-flight calls"
