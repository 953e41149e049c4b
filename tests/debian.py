"""Installing a Debian package a test needs (Postfix, Chromium) when it is missing: the suite
brings its own real parts on a fresh machine. Only as root with apt; the answer says why not."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# Debconf answers that keep a package from configuring a system service of its own.
PRESEED = {"postfix": "postfix postfix/main_mailer_type select No configuration\n"}


def ensure(package: str, binary: str) -> str | None:
    """Make `binary` exist by installing `package`; None when it is there, else why not."""
    if Path(binary).exists():
        return None
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return f"{package} is not installed and this user cannot install Debian packages"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if package in PRESEED:
        subprocess.run(
            ["debconf-set-selections"], input=PRESEED[package], text=True, env=env, check=False
        )
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:  # stale package lists: refresh them once and try again
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=900)
        done = subprocess.run(install, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0 or not Path(binary).exists():
        return f"installing {package} failed: {done.stderr.strip()[-300:]}"
    return None
