"""``python -m odin_client.cli``: the ``odin`` command."""

import sys

from odin_client.cli.main import main

sys.exit(main())
