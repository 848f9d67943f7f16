"""The blocking client, generated from :mod:`odin_client.client._async`: edit the source, not these files."""
