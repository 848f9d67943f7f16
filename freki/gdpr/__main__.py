"""``python -m freki.gdpr export --address H:P --tenant T --owner O --out FILE [--vectors]``."""

import sys

from freki.gdpr.cli import main

sys.exit(main())
