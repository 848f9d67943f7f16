"""The knowledge graph (Mindnet): typed links between a tenant's documents, resolved by name at read time,
graph-expanded retrieval, explanations per hit and the feedback log. docs/retrieval.md "Knowledge graph"."""
