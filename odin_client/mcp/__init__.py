"""The MCP server (``odin mcp``): Odin's search, ask and document calls as Model Context Protocol tools and
resources, over stdio or Streamable HTTP. Needs the ``mcp`` extra (the official MCP Python SDK).

Stages: ``settings`` (transport, keys, limits), ``access`` (who calls: key, tenant, scopes), ``clients``
(one Odin client per key), ``tools`` (MCP arguments → Odin calls → JSON), ``server`` (scope and argument
rules, resources, the two transports), ``cli`` (``odin mcp``). Nothing here imports the SDK at package import.
"""
