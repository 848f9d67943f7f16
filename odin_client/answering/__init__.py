"""Grounded answers: what Odin asks of Geri, and what it accepts back.

``sources`` numbers the retrieved chunks and their sentences for the prompt; ``schema`` builds the
answer's JSON schema for exactly those sources (a citation can only name a sentence that was given);
``grounding`` turns Geri's JSON into a :class:`~odin_client.answering.grounding.GroundedAnswer` — with
citations resolved to quotes, and ``answered: false`` with a reason whenever the sources do not carry
the answer; ``queries`` rewrites follow-up questions and asks for query variants.
"""
