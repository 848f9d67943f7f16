"""Search: a query becomes ranked chunks.

``retrieval.Retriever`` fetches dense and sparse candidates from the store (filters, document ids,
query variants), ``fusion`` combines them (convex or RRF), ``rerank`` optionally re-orders (cross-encoder,
MMR). ``retrieval.Query`` and ``retrieval.Hit`` are what goes in and out.
"""
