"""Tools a model may call through Odin: a registry with per-tool argument schemas, scopes and confirmation,
and a bounded loop that runs the calls Geri returns and hands their results back to the model.

``registry`` decides (known tool, arguments valid, scopes held, confirmation needed); ``loop`` is the
conversation with Geri (sans-IO); ``running`` runs a handler within its time limit; ``driving`` connects
the loop to a client (``OdinClient.run_tools`` / ``AsyncOdinClient.run_tools``).
"""

from odin_client.tools.loop import ToolCallRecord, ToolLoopResult
from odin_client.tools.registry import Tool, ToolRegistry

__all__ = ["Tool", "ToolCallRecord", "ToolLoopResult", "ToolRegistry"]
