"""Start a stdio tool server so that it dies with the process that started it (Linux).

Run as `python -I -S launcher.py PARENT_PID COMMAND ARG...` in place of the server's own
command line: the command and arguments are the ones the operator allowed, passed through
unchanged (no shell). The launcher asks the kernel for a signal when its parent dies
(PR_SET_PDEATHSIG), then starts the server as its child in the same process group and waits.
When the parent dies, even by SIGKILL with no chance to clean up, the launcher stops the
whole group (the server and anything it started); the server itself also gets SIGKILL if the
launcher goes first. The launcher is also a child subreaper (PR_SET_CHILD_SUBREAPER): what the
server started in a session of its own (setsid, Node's detached spawn) leaves the group but
stays below the launcher, which stops it too. A SIGTERM to the group (the SDK's normal
shutdown) reaches the server directly; the launcher outlives it to end whatever the server
left running and to pass on its exit status.

Standard library only, and nothing imported from the project: it runs isolated (-I -S).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_GONE = signal.SIGUSR1
TERM_GRACE = 2.0


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _die_with_parent(sig: int) -> None:
    _prctl(PR_SET_PDEATHSIG, int(sig))


def _stop_group(*_: object) -> None:
    """The parent died: SIGTERM the group, a moment's grace, then SIGKILL (self included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _signal(_ours(outside_group=True), signal.SIGTERM)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.02)
    _signal(_ours(), signal.SIGKILL)
    os.killpg(0, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: launcher.py PARENT_PID COMMAND [ARG...]\n")
        return 2
    parent, command, args = int(argv[0]), argv[1], argv[2:]
    signal.signal(PARENT_GONE, _stop_group)
    _die_with_parent(PARENT_GONE)
    with contextlib.suppress(OSError):  # Linux 3.4 and later
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != parent:  # the parent died before the request took effect
        return 1
    executable = shutil.which(command)
    if executable is None:
        reason = "Permission denied" if os.path.exists(command) else "No such file or directory"
        sys.stderr.write(f"cannot start {command!r}: {reason}\n")
        return 127
    child = os.fork()
    if child == 0:
        try:
            signal.signal(PARENT_GONE, signal.SIG_DFL)
            _die_with_parent(signal.SIGKILL)  # the launcher killed: the server goes too
            # The allowed command line, as given: no shell, nothing added.
            os.execv(executable, [command, *args])  # noqa: S606  # nosec B606
        except OSError as exc:
            sys.stderr.write(f"cannot start {command!r}: {exc.strerror or exc}\n")
        os._exit(127)
    # The server has stdin and stdout; the launcher keeps neither open, so the client sees
    # end-of-file as soon as the server exits.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    # A group-wide SIGTERM or SIGINT is for the server: the launcher waits for it to exit.
    signal.signal(signal.SIGTERM, lambda *_: None)
    signal.signal(signal.SIGINT, lambda *_: None)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except ChildProcessError:
            status = 0
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            break
    _end_the_rest()
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _processes() -> dict[int, tuple[str, int, int]]:
    """Every process: its state, parent and process group (from /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry)] = (fields[0], int(fields[1]), int(fields[2]))
    return found


def _ours(*, outside_group: bool = False) -> list[int]:
    """What the server started, wherever it went: this process group, and every process below
    the launcher (one in a session of its own is still below it, the launcher being a subreaper).
    `outside_group`: only those that left the group, which a signal to the group misses."""
    processes, me = _processes(), os.getpid()
    group = os.getpgid(0)
    below = {me}
    while more := {pid for pid, (_, parent, _) in processes.items() if parent in below and pid not in below}:
        below |= more
    ours = []
    for pid, (state, _, pgrp) in processes.items():
        if pid == me or state == "Z":
            continue
        if (pgrp == group and not outside_group) or (pgrp != group and pid in below):
            ours.append(pid)
    return ours


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _end_the_rest() -> None:
    """The server is gone: what it started goes too (a helper, a watcher, a browser), however
    it exited, so no orphan outlives the connection. SIGTERM, a moment's grace, SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        others = _ours()
        _signal(others, sig)
        deadline = time.monotonic() + TERM_GRACE
        while others and time.monotonic() < deadline:
            time.sleep(0.02)
            _reap()
            others = _ours()
        if not others:
            return


def _reap() -> None:
    """Collect adopted children that exited (a subreaper's zombies are its own to wait for)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
