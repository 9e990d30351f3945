"""`python -m vkir ...`: the `vkir` command line without the console script on PATH."""

import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
