"""Run the README's walkthrough (the ``sh`` blocks between ``<!-- walkthrough -->`` markers) in
one bash session against a real server, as a newcomer pasting them would.

    .venv/bin/python scripts/readme_walkthrough.py [--workdir DIR] [--port N] [--sim-speed X]

The blocks run in DIR (a fresh temporary directory by default, with ``.venv`` linked to this
repository's), so the database, logs and files they create stay there. Ports 8000 and 8095 of
the text are replaced by free ones; ``curl`` fails on HTTP errors; background jobs are stopped
at the end. Exit status: the session's.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
PRELUDE = """set -euo pipefail
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
curl() { command curl --fail-with-body --max-time 60 "$@"; }
"""


def walkthrough(readme: str) -> str:
    section = readme.split("<!-- walkthrough -->", 1)[1].split("<!-- /walkthrough -->", 1)[0]
    return "\n".join(BLOCK.findall(section))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(workdir: Path, port: int, hook_port: int, sim_speed: float) -> int:
    script = walkthrough((ROOT / "README.md").read_text())
    script = script.replace("8000", str(port)).replace("8095", str(hook_port))
    venv = workdir / ".venv"
    if not venv.exists():
        venv.symlink_to(ROOT / ".venv")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SWITCHBOARD_")  # a fresh shell: only what the blocks set
    }
    env["SWITCHBOARD_SIM_SPEED"] = str(sim_speed)
    (workdir / "walkthrough.sh").write_text(PRELUDE + script)
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run(  # noqa: S603 (our own README, by design)
        [bash, "-x", "walkthrough.sh"], cwd=workdir, env=env, check=False
    ).returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--sim-speed", type=float, default=20.0)
    args = parser.parse_args()
    port = args.port or free_port()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        sys.exit(run(args.workdir, port, free_port(), args.sim_speed))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(run(Path(tmp), port, free_port(), args.sim_speed))


if __name__ == "__main__":
    main()
