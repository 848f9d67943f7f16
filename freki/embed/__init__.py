"""Embed: texts become vectors.

* Dense: ``embedder.Embedder`` (the model, a query LRU cache, micro-batching via ``query_batching``). How the
  model runs is chosen once at start by ``selection.build_encoder``: ``encoders`` (tokenise and batch by
  length), ``runners`` (ONNX Runtime fp32, torch bf16), ``onnx_export`` (the cached ONNX graph).
  ``remote.RemoteEmbedder`` is the same interface (``model.EmbeddingModel``) over a model an Ollama or
  OpenAI-compatible server embeds with (``remote_client``: requests, retries, the caller's deadline).
* Sparse: ``sparse.SparseEncoder`` (BM25 term weights) for lexical search; each text's terms come from the
  ``analyzers`` of its language (``language`` detects it; ``stemming`` stems, ``compounds`` splits German).
"""
