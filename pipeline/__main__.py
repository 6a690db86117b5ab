"""``python -m pipeline``: see pipeline.cli.

SIGTERM ends the driver as Ctrl-C does from its first moment (pipeline.faults.Terminated): the
handler is set before the packages load, which takes seconds, and a stop then is one line.
"""

import signal
import sys

from pipeline.faults import Terminated, stop_on_sigterm

if __name__ == "__main__":
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        from pipeline import cli
    except KeyboardInterrupt as e:  # pipeline.cli's exit codes TERMINATED and INTERRUPTED
        by, code = (
            ("stopped by SIGTERM", 143) if isinstance(e, Terminated) else ("interrupted", 130)
        )
        print(f"error: {by} before the sweep started; nothing was run", file=sys.stderr)
        sys.exit(code)
    cli.entry(sys.argv[1:])
