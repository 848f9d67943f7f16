"""``ask``: what Odin chains to answer a question — and nothing of how an answer is made.

``grounded`` is the grounded ask as a sans-IO flow over the contract (GeriService.RewriteQuery for a
follow-up and query variants, FrekiService.RetrieveContext, then GeriService.Answer or AnswerStream) and the
conversion of Geri's :class:`GroundedAnswer` into :class:`~odin_client.types.results.Answer`. Numbering the
sources, the answer schema, the abstention gate and the grounding check are Geri's (``geri/answering``).
``free_text`` is the free-text ask (``grounded=False``): retrieve, then Geri's prose, streamed if asked.
"""
