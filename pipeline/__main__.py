"""``python -m pipeline``: see pipeline.cli.

SIGTERM ends the driver as Ctrl-C does from its first moment (pipeline.sweep.faults.Terminated): the
handler is set before the packages load, which takes seconds, and a stop then is one line.
"""

import signal
import sys

from pipeline.sweep.faults import stop_on_sigterm, stopped_before_start

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        from pipeline import cli
    except KeyboardInterrupt as e:  # pipeline.cli's exit codes TERMINATED and INTERRUPTED
        code, line = stopped_before_start(e)
        print(f"error: {line}", file=sys.stderr)
        sys.exit(code)
    cli.entry(sys.argv[1:])
