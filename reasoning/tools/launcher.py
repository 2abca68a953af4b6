"""Start a stdio tool server so that it dies with the process that started it (Linux).

Run as `python -I -S launcher.py PARENT_PID COMMAND ARG...` in place of the server's own
command line: the command and arguments are the ones the operator allowed, passed through
unchanged (no shell). The launcher asks the kernel for a signal when its parent dies
(PR_SET_PDEATHSIG), then starts the server as its child in the same process group and waits.
When the parent dies, even by SIGKILL with no chance to clean up, the launcher stops the
whole group (the server and anything it started); the server itself also gets SIGKILL if the
launcher goes first. A SIGTERM to the group (the SDK's normal shutdown) reaches the server
directly; the launcher outlives it to end whatever the server left running in the group and
to pass on its exit status.

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
PARENT_GONE = signal.SIGUSR1
TERM_GRACE = 2.0


def _die_with_parent(sig: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")


def _stop_group(*_: object) -> None:
    """The parent died: SIGTERM the group, a moment's grace, then SIGKILL (self included)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.02)
    os.killpg(0, signal.SIGKILL)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: launcher.py PARENT_PID COMMAND [ARG...]\n")
        return 2
    parent, command, args = int(argv[0]), argv[1], argv[2:]
    signal.signal(PARENT_GONE, _stop_group)
    _die_with_parent(PARENT_GONE)
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


def _others_in_group() -> list[int]:
    """The processes of this process group besides the launcher: what the server started."""
    group, me, others = os.getpgid(0), os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            others.append(int(entry))
    return others


def _end_the_rest() -> None:
    """The server is gone: what it started goes too (a helper, a watcher, a browser), however
    it exited, so no orphan outlives the connection. SIGTERM, a moment's grace, SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        others = _others_in_group()
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + TERM_GRACE
        while others and time.monotonic() < deadline:
            time.sleep(0.02)
            others = _others_in_group()
        if not others:
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
