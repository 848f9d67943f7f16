"""A stop asked for while a server starts is kept: the server stops as soon as it is up, gracefully."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from wolf_service.serving import StopSignals, build_grpc_server, serve_until_signal

ROOT = Path(__file__).resolve().parents[2]


def test_a_sigterm_before_the_server_is_up_stops_it_once_it_is() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stopped: list[str] = []
    rescued = threading.Event()

    def rescue() -> None:  # ends a wait that the lost SIGTERM would otherwise leave hanging
        rescued.set()
        os.kill(os.getpid(), signal.SIGINT)

    with StopSignals() as signals:
        os.kill(os.getpid(), signal.SIGTERM)  # the supervisor's stop, while the server is still loading
        handle = build_grpc_server(register=lambda _server: None, service_names=["test.Service"],
                                   address="127.0.0.1:0")
        watchdog = threading.Timer(10, rescue)
        watchdog.start()
        try:
            serve_until_signal(handle, grace=1, on_stop=lambda: stopped.append("closed"), signals=signals)
        finally:
            watchdog.cancel()
    assert not rescued.is_set(), "the SIGTERM sent while the server started was lost"
    assert stopped == ["closed"]
    assert signal.getsignal(signal.SIGTERM) is before


def test_restoring_twice_keeps_the_handlers_that_were_there_first() -> None:
    before = signal.getsignal(signal.SIGINT)
    signals = StopSignals()
    signals.restore()
    signals.restore()
    assert signal.getsignal(signal.SIGINT) is before


STUCK_START = textwrap.dedent("""
    import signal, sys, time
    from wolf_service.serving import StopSignals
    if sys.argv[1] == "ignored":  # a background job of a shell starts with SIGINT ignored
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    with StopSignals() as signals:
        print("loading", flush=True)
        while not signals.requested.is_set():  # the first stop is kept for when the server is up
            time.sleep(0.01)
        print("stop kept", flush=True)
        time.sleep(60)  # a load that takes long, or never ends
        print("loaded", flush=True)
""")


@pytest.mark.parametrize(("sig", "before"), [(signal.SIGTERM, "default"), (signal.SIGINT, "default"),
                                             (signal.SIGINT, "ignored")])
def test_a_second_stop_while_the_server_starts_stops_it_at_once(sig: signal.Signals, before: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "protos")])}
    child = subprocess.Popen([sys.executable, "-c", STUCK_START, before], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "loading"
        child.send_signal(sig)
        assert child.stdout.readline().strip() == "stop kept"
        child.send_signal(sig)
        out, _err = child.communicate(timeout=30)
    finally:
        child.kill()
        child.wait()
    assert "loaded" not in out
    assert child.returncode != 0
