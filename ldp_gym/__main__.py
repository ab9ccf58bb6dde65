"""``python -m ldp_gym``: the ``ldp-gym`` command line."""

import sys

from ldp_gym.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
