"""``python -m expost.cli``: the ``expost`` command."""

import sys

from expost.cli import main

sys.exit(main())
