"""The values Odin hands to its callers: results, errors, filters, index status and document records.

The bottom layer of ``odin_client``: plain data and the error classes, importing nothing else of the package.
"""
