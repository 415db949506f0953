"""``python -m trainctl.storage_initializer``: see storage.py."""

import sys

from .storage import main

sys.exit(main())
