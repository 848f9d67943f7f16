"""Backup, restore and retention of a Freki index: the operator's stage above GDPR erasure.

* ``snapshot``: ``create_backup`` — a consistent copy of a serving Freki's data dir (writes pause for the copy)
  into a directory or a tar file, with a ``manifest`` (format version, files with SHA-256, counts).
* ``source``: a backup read as untrusted input and checked against its manifest.
* ``restore``: into an empty data dir, verified, the key store checked against the collections, then
  ``reapply``: every erasure in the erasure log (``freki.store.erasure_log``) applied again, so a backup taken
  before an erasure never brings the erased data back.
* ``retention``: policies that erase documents past an age, in the background, through GDPR erasure.
* ``cli``: ``freki backup`` (the CreateBackup RPC of a running Freki) and ``freki restore``.
"""
