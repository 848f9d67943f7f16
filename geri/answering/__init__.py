"""Grounded answers: Geri answers a question over a caller's RAG context with checked citations.

``sources`` numbers the context's documents and their sentences for the prompt; ``schema`` builds the
answer's JSON schema for exactly those sources (a citation can only name a sentence that was given);
``grounding`` turns the model's JSON into a ``wolf.v1.GroundedAnswer`` — citations resolved to quotes,
and ``answered: false`` with a reason whenever the sources do not carry the answer; ``queries`` rewrites
follow-up questions and asks for query variants. The RPCs that use them (Answer, AnswerStream,
RewriteQuery) run through the generation pipeline like any other generation.
"""
