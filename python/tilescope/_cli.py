"""Running the tilescope CLI: found by TILESCOPE_CLI, then the package's own, then PATH."""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import List, Sequence

from ._paths import packaged_cli


class CliNotFoundError(FileNotFoundError):
    """No tilescope CLI could be found."""


class CliError(RuntimeError):
    """The CLI refused its input (exit 2) or failed (exit 3): the message is its own."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


def find_cli() -> str:
    """The tilescope executable: $TILESCOPE_CLI, else the package's bin/tilescope, else PATH."""
    env = os.environ.get("TILESCOPE_CLI")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise CliNotFoundError(f"TILESCOPE_CLI={env!r} is not an executable file")
    own = packaged_cli()
    if own is not None:
        return str(own)
    found = shutil.which("tilescope")
    if found:
        return found
    raise CliNotFoundError(
        "the tilescope CLI was not found: set TILESCOPE_CLI to the `tilescope` binary (build it with "
        "`cmake --build --preset default --target tilescope`: build/default/app/cli/tilescope), or put it on PATH")


def run_cli(args: Sequence[str], ok: Sequence[int] = (0,)) -> subprocess.CompletedProcess:
    """Runs the CLI with ``args``; an exit status outside ``ok`` raises :class:`CliError`."""
    cmd: List[str] = [find_cli(), *args]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in ok:
        message = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise CliError(f"tilescope {' '.join(args[:1])} failed (exit {done.returncode}): {message}", done.returncode)
    return done
