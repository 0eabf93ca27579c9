"""`python -m pytps`, as the `pytps` command."""

import sys

try:
    from pytps.cli import main
except KeyboardInterrupt:  # Ctrl-C in the first instant of start-up
    print("pytps: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
