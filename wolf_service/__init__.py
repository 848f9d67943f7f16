"""Shared gRPC service runtime for Freki and Geri.

Error mapping (``errors``), server lifecycle with health, reflection and graceful
shutdown (``serving``), and settings-file loading (``settings``).
"""
