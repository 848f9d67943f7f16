"""What Odin says to Freki and Geri, without doing any I/O: the requests (``messages``), one spec per call
(``specs``: RPC, request, deadline, retry class, result conversion), the retry policy and the attempts of one
call (``retry``, ``attempts``), channel options and pooling (``channels``), sans-IO flows (``flows``), the
IndexDocuments stream's bookkeeping (``index_stream``) and the files a folder holds (``files``).

The clients in :mod:`odin_client.client` only run these; nothing here imports them.
"""
