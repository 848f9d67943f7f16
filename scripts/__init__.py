"""The project's scripts: benchmarks (``scripts.bench``), quality evaluations (``scripts.eval``) and the demo.

Run them from the project root as modules, e.g. ``python -m scripts.demo`` or ``python -m scripts.eval.retrieval
--quick 100``; the project's packages and generated stubs come from its editable install (``make install``).
"""
