"""What starting stdio tool servers through the launcher costs (issue 14's no-leaked-children).

Each server starts through `reasoning/tools/launcher.py` (PR_SET_PDEATHSIG, then the allowed
command as its child), so it dies with its parent. Measured side by side, alternating: the
time to connect (start the process, MCP initialize, list tools) through the launcher and
with the command started directly; and the launcher's own memory, which each stdio server
carries for as long as it runs. A connection is made once per server per process.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from reasoning.tools import mcp_pool
from reasoning.tools.mcp import MCPConnectionPool, MCPServerConfig

FAULTY = str(Path(__file__).parents[1] / "chat" / "servers" / "faulty.py")
ROUNDS = 6


def _direct(command: str, args: list[str]) -> tuple[str, list[str]]:
    return command, args


def _connect(name: str, launch: object) -> tuple[float, int | None]:
    """Seconds to a live connection, and the launcher's resident memory in kB (or None)."""
    original = mcp_pool.launch_command
    mcp_pool.launch_command = launch  # type: ignore[assignment]
    pool = MCPConnectionPool()
    try:
        connection = pool.connection(MCPServerConfig(name=name, command=sys.executable, args=(FAULTY,)))
        started = time.perf_counter()
        pool.submit(connection.ensure()).result(60)
        elapsed = time.perf_counter() - started
        memory = None
        if launch is original:
            with open(f"/proc/{connection.pids[0]}/status", encoding="ascii") as status:
                memory = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
        return elapsed, memory
    finally:
        pool.close_sync()
        mcp_pool.launch_command = original


def main() -> list[str]:
    if not sys.platform.startswith("linux"):
        return ["tool servers: the launcher is Linux-only; nothing to measure here"]
    through, direct, memory = [], [], []
    for round_ in range(ROUNDS):
        elapsed, rss = _connect(f"launched{round_}", mcp_pool.launch_command)
        through.append(elapsed)
        memory.append(rss or 0)
        direct.append(_connect(f"direct{round_}", _direct)[0])
    ratio = statistics.median(through) / statistics.median(direct)
    spread = f"{min(through):.2f}-{max(through):.2f}s / {min(direct):.2f}-{max(direct):.2f}s"
    megabytes = statistics.median(memory) / 1024
    return [
        f"tool servers: connect through the launcher / directly = {ratio:.2f} "
        f"(medians {statistics.median(through):.2f}s / {statistics.median(direct):.2f}s over {ROUNDS} "
        f"alternating rounds; spread {spread})",
        f"tool servers: the launcher's resident memory per stdio server: {megabytes:.1f} MB",
    ]
