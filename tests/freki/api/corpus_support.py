"""A tiny corpus with distinct topics and facts, shared by Freki's integration tests."""

GERI_DOC = """---
title: Geri operations guide
team: platform
lang: en
---
# Networking

The Geri service listens on TCP port 50051 by default. Change it with the GERI_PORT variable.
Clients should open one channel and reuse it for every call.

# Models

Geri pulls models from Ollama. A missing model is reported with the exact pull command to run.
"""

BAKERY_DOC = """---
title: Sourdough notes
team: kitchen
---
# Starter

Feed the sourdough starter with equal weights of flour and water every twelve hours.
A healthy starter doubles in size within six hours and smells pleasantly sour.

# Baking

Bake the loaf in a preheated Dutch oven at 250 degrees Celsius for twenty minutes with the lid on.
"""

ASTRO_DOC = """Jupiter is the largest planet in the solar system. Its Great Red Spot is a storm larger than Earth
that has raged for centuries. The planet has at least ninety-five known moons, among them Ganymede, the
largest moon in the solar system, which is even bigger than the planet Mercury."""
