"""doccheck.webhooks._secret_file: owner-only file, bounded previous-secret window, atomic writes."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from pydantic import SecretStr

from doccheck.errors import InsecureSecretFile, SecretFileError
from doccheck.webhooks._secret_file import SecretFile


def values(secrets: list[SecretStr]) -> list[str]:
    return [s.get_secret_value() for s in secrets]


def test_created_owner_only_and_read_back(tmp_path: Path) -> None:
    f = SecretFile(tmp_path / "sub" / "s.json")
    assert f.secrets() == []  # no file yet: no secret, not an error
    f.store(SecretStr("whsec_a"), scope="acct-1")
    assert stat.S_IMODE(f.path.stat().st_mode) == 0o600
    assert values(f.secrets()) == ["whsec_a"]
    assert "whsec_a" not in repr(f)


def test_rotation_keeps_previous_only_for_its_window(tmp_path: Path) -> None:
    f = SecretFile(tmp_path / "s.json")
    f.store("whsec_old", now=1000.0)
    f.store("whsec_new", previous_window_s=600, now=2000.0)
    assert values(f.secrets(now=2000.0)) == ["whsec_new", "whsec_old"]
    assert values(f.secrets(now=2599.0)) == ["whsec_new", "whsec_old"]
    assert values(f.secrets(now=2600.0)) == ["whsec_new"]
    f.store("whsec_newer", previous_window_s=0, now=3000.0)  # 0: the old one is gone at once
    assert values(f.secrets(now=3000.0)) == ["whsec_newer"]
    entry = f.read()["default"]
    assert entry["previous"] is None and "whsec_old" not in f.path.read_text()


def test_storing_the_same_secret_again_keeps_the_window(tmp_path: Path) -> None:
    f = SecretFile(tmp_path / "s.json")
    f.store("a", now=0.0)
    f.store("b", previous_window_s=100, now=10.0)
    f.store("b", previous_window_s=100, now=50.0)
    assert f.read()["default"]["previous_valid_until"] == 110.0


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606])
def test_group_or_world_access_is_refused(tmp_path: Path, mode: int) -> None:
    f = SecretFile(tmp_path / "s.json")
    f.store("whsec_x")
    f.path.chmod(mode)
    with pytest.raises(InsecureSecretFile, match="chmod 600") as caught:
        f.secrets()
    assert "whsec_x" not in str(caught.value)


def test_symlink_and_garbage_are_refused(tmp_path: Path) -> None:
    target = SecretFile(tmp_path / "real.json")
    target.store("whsec_x")
    link = tmp_path / "link.json"
    link.symlink_to(target.path)
    with pytest.raises(SecretFileError):
        SecretFile(link).secrets()
    bad = tmp_path / "bad.json"
    bad.write_text('{"scopes": {"a": {"current": NaN}}}')
    bad.chmod(0o600)
    with pytest.raises(SecretFileError, match="not valid"):
        SecretFile(bad).secrets()


def test_delete_and_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    f = SecretFile(tmp_path / "s.json")
    threads = [threading.Thread(target=f.store, args=(f"whsec_{i}",), kwargs={"scope": f"s{i}"}) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(f.read()) == 20
    assert f.delete("s3") and not f.delete("s3")
    assert "whsec_3" not in values(f.secrets())
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".s.json.")]  # no temporary left over


def test_empty_secret_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SecretFile(tmp_path / "s.json").store("  ")
