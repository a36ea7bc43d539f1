"""``storage._s3_store``: obstore's store for an S3 location takes its credentials as s3fs would,
the ``AWS_*`` variables read without loading botocore, anything further down the chain (a profile)
asked of botocore, and no store (s3fs reads) where the options or the region are not known."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from doccheck.storage import resolve
from doccheck.storage._s3_store import _BotocoreCredentials, _store, store_and_key

_CHAIN = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION",
          "AWS_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")  # fmt: skip


@pytest.fixture
def no_chain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in _CHAIN:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    _store.cache_clear()
    return tmp_path


def test_keys_in_the_environment_are_read_without_botocore(no_chain: Path) -> None:
    script = (
        "import sys\n"
        "from doccheck.storage import resolve\n"
        "from doccheck.storage._s3_store import store_and_key\n"
        "found = store_and_key(resolve('s3://bucket/term/a.txt'))\n"
        "print(found is not None and found[1], 'botocore' in sys.modules)\n"
    )
    env = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "not-a-real-secret",
           "AWS_DEFAULT_REGION": "eu-west-1", "PATH": "/usr/bin:/bin"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["term/a.txt", "False"]


def test_a_profile_is_asked_of_botocores_chain(no_chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_chain / "credentials").write_text("[term]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s3cr3t\n")
    (no_chain / "config").write_text("[profile term]\nregion = eu-central-1\n")
    monkeypatch.setenv("AWS_PROFILE", "term")
    found = store_and_key(resolve("s3://bucket/term/a.txt"))
    assert found is not None
    store = found[0]
    assert store.config["region"] == "eu-central-1"  # the profile's region, from botocore
    assert isinstance(store.credential_provider, _BotocoreCredentials)
    assert store.credential_provider()["access_key_id"] == "AKIDPROFILE"
    assert "access_key_id" not in store.config


def test_aws_itself_with_no_region_and_unknown_options_are_left_to_s3fs(no_chain: Path) -> None:
    assert store_and_key(resolve("s3://bucket/term/a.txt", options={"anon": True})) is None  # AWS, no region
    assert store_and_key(resolve("s3://bucket/a.txt", options={"requester_pays": True})) is None
    assert store_and_key(resolve("s3://bucket", options={"endpoint_url": "http://127.0.0.1:9"})) is None  # no key
    assert store_and_key(resolve("s3://bucket", options={"endpoint_url": "http://127.0.0.1:9"}), prefix=True)
