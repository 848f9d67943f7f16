"""A stop asked for while a server starts is kept: the server stops as soon as it is up, gracefully."""

from __future__ import annotations

import os
import signal
import threading

from wolf_service.serving import StopSignals, build_grpc_server, serve_until_signal


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
