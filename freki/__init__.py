"""Freki, the RAG service. Read the packages in pipeline order:

* ``ingest/``  a document comes in: ``parsing/`` (bytes -> sections) -> ``sentences``/``segmenting``/``chunking``
  (sections -> chunks sized to the model) -> ``indexing`` (incremental: embed what changed, write, record it
  in the ``registry``).
* ``embed/``   texts -> vectors: the dense ``Embedder`` (model runtimes in ``encoders``/``runners``/``selection``)
  and the lexical ``sparse`` encoder (BM25 term weights per language: ``language``, ``analyzers``).
* ``store/``   one ``VectorStore`` interface: Qdrant's engine in-process (``edge``) or a Qdrant server (``remote``).
* ``search/``  a query is answered: ``retrieval`` (dense / sparse / hybrid candidates) -> ``fusion`` -> ``rerank``.
* ``engine``   wires the stages together from ``settings``; ``watch/`` feeds it from folders; ``gdpr/`` erases
  and exports a data owner's data.
* ``api/``     the gRPC face: ``servicer`` (RPCs), ``validation``, ``convert`` (protobuf <-> domain), ``server``
  (start/stop), ``operations`` (metrics, audit, hot reload). ``cli`` is ``freki serve``.

docs/architecture.md draws the request and ingest paths through these packages.
"""
