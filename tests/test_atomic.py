"""trgc.atomic: atomic publication and bounded, coded reads."""

from __future__ import annotations

import os

import pytest

from trgc.atomic import atomic_write, read_bytes
from trgc.errors import TrgcError


def test_atomic_write_publishes_whole_files_with_umask_permissions(tmp_path):
    target = tmp_path / "out.bin"
    atomic_write(target, b"first")
    atomic_write(target, b"second")
    assert target.read_bytes() == b"second"
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_atomic_write_failure_leaves_nothing(tmp_path):
    with pytest.raises(TrgcError) as info:
        atomic_write(tmp_path / "absent" / "out.bin", b"x")
    assert info.value.code == "E_IO"
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_interrupted_mid_write_leaves_nothing(tmp_path, monkeypatch):
    def fail(_fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(tmp_path / "out.bin", b"x")
    assert list(tmp_path.iterdir()) == []


def test_read_bytes_bounded(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(b"x" * 10)
    assert read_bytes(path, 10) == b"x" * 10
    with pytest.raises(TrgcError) as info:
        read_bytes(path, 9)
    assert info.value.code == "E_LIMIT_INPUT_BYTES" and info.value.exit_status == 3
    with pytest.raises(TrgcError) as info:
        read_bytes(tmp_path / "absent", 10)
    assert info.value.code == "E_IO" and info.value.source.endswith("absent")
