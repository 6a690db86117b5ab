"""``python -m pipeline``: see pipeline.cli."""

import sys

from pipeline import cli

if __name__ == "__main__":
    try:
        cli.main()
    except SystemExit as e:
        # Hydra prints its own error and exits 1 when it cannot compose the command line (an
        # unknown key, a wrong type, an unknown option): that is a usage error, like a bad value
        if e.code == 1 and not cli.composed:
            sys.exit(int(cli.ExitCode.USAGE))
        raise
