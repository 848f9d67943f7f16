"""Benchmarks: each prints figures and asserts nothing (``python -m scripts.bench.<name> --help``).

``make bench`` runs the main ones; docs/benchmarks.md keeps every measured figure with its CPU and date.
"""
