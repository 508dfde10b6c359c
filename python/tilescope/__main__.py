"""``python -m tilescope ARGS``: runs the tilescope CLI with ARGS (its exit status too)."""
import os
import sys

from ._cli import CliNotFoundError, find_cli


def main() -> int:
    try:
        cli = find_cli()
    except CliNotFoundError as e:
        print(f"tilescope: {e}", file=sys.stderr)
        return 3
    os.execv(cli, [cli, *sys.argv[1:]])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
