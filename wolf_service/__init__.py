"""Shared gRPC service runtime for Freki and Geri.

* Lifecycle: ``serving`` (build with health + reflection, serve, stop gracefully), ``healthcheck`` (probe),
  ``service_ops`` (wires everything below onto a server).
* Per-call interceptors on one base (``wrapping``): ``error_mapping`` (exceptions -> status codes, from
  ``errors``), ``auth`` (API keys), ``logs`` (JSON logs, access log), ``metrics`` (Prometheus),
  ``audit_interceptor`` (which RPCs are audited) writing to ``audit_log`` (the append-only file).
* Configuration: ``settings`` (defaults < file < environment < flags), ``reload`` (hot reload), ``tls``.
* ``tokens``: offline tiktoken counting.
"""
