"""``python -m router.cli``: the same command as the ``skill-router`` console script."""

import sys

from router.cli import main

sys.exit(main())
