"""Fixtures of the fault-injection tests."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Callable

import pytest


@pytest.fixture
def small_tmpfs(tmp_path) -> Callable[[str], Path]:
    """``small_tmpfs("32k")`` mounts a tmpfs of that size under ``tmp_path`` and returns it (needs root,
    as on CI; the test is skipped elsewhere); every mount is undone afterwards."""
    mounts: list[Path] = []

    def mount(size: str) -> Path:
        folder = tmp_path / f"disk{len(mounts)}"
        folder.mkdir()
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                              capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (not root?): {made.stderr.decode().strip()}")
        mounts.append(folder)
        return folder

    yield mount
    for folder in mounts:
        subprocess.run(["umount", "-l", str(folder)], check=False)
