"""Quality evaluations of retrieval and answers on real data sets (``python -m scripts.eval.<name> --help``).

The data sets and the harness that drives a real Freki over gRPC are in ``scripts.evalsets``.
"""
