"""odin_client package."""
