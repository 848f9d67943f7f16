"""Structured output and tool calls: what a reply must look like, and checking that it does.

``schemas`` checks the JSON schemas and tool definitions a request carries (valid JSON Schema,
within size and depth limits); ``contract.OutputContract`` turns them into the schema the backend
decodes against and parses and validates the model's reply (answer text, JSON, tool calls), saying
exactly what is wrong when it is not valid, so the pipeline can ask once for a repair.
"""
