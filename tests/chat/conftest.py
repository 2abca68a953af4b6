"""Fixtures shared by the tool server tests."""

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
CACHE = Path(__file__).parents[2] / "var" / "npm"


@pytest.fixture(scope="session")
def everything() -> str:
    """The server's entry point, installed by npm into the cache when it is not there yet."""
    entry = CACHE / "node_modules" / PACKAGE / "dist" / "index.js"
    if not (shutil.which("npm") and shutil.which("node")):
        message = "npm and node are needed to install and run @modelcontextprotocol/server-everything"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    installed = CACHE / "node_modules" / PACKAGE / "package.json"
    CACHE.mkdir(parents=True, exist_ok=True)
    # Test processes run in parallel (pytest-xdist): one installs while the others wait.
    with (CACHE / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not installed.exists() or f'"version": "{VERSION}"' not in installed.read_text():
            subprocess.run(
                ["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"],
                check=True,
                capture_output=True,
                timeout=300,
            )
    return str(entry)
