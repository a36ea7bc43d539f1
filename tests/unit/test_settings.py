"""The one settings model: every field's bad value is one line and exit 2, ``doccheck config``
names each value's source and never a secret (the reference page and the README agree with it:
``tests/unit/commands/test_show_settings.py``).

Parametrized over :func:`doccheck.config.fields`: a new field is covered by construction (it
needs a bad value below, generated from its type, or a place in ``ANY_TEXT``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from doccheck.cli import app
from doccheck.config import SECRET_MASK, SettingsField, fields, load_settings, process_block, setting, sources_of
from doccheck.errors import SettingsError

ROOT = Path(__file__).resolve().parents[2]

#: Fields whose checks are validators rather than types: a value each refuses.
BAD_BY_RULE = {
    "DOCCHECK_BASE_URL": "notaurl",
    "DOCCHECK_DATABASE_URL": "notaurl",
    "DOCCHECK_SCHEDULE_TIMEZONE": "Mars/Olympus",
    "DOCCHECK_SCHEDULE_CRON": "weekly",
    "DOCCHECK_PRODUCTS": "ai,horoscope",
    "DOCCHECK_STORAGE_OPTIONS": "not json",
    "DOCCHECK_ARTIFACT_LINKS": "signed",
}
#: Fields any text is a valid value of (names, paths not yet opened, secrets).
ANY_TEXT = {
    "DOCCHECK_API_KEY",
    "DOCCHECK_API_KEY_BLOCK",
    "DOCCHECK_CREDENTIALS_BLOCK",
    "DOCCHECK_WEBHOOK_SECRET",
    "DOCCHECK_WEBHOOK_SECRET_FILE",
    "DOCCHECK_WEBHOOK_URL",
    "DOCCHECK_SHARD_DEPLOYMENT",
    "DOCCHECK_RATE_LIMIT_NAME",
    "DOCCHECK_MANIFEST",
    "DOCCHECK_CAMPAIGN",
    "DOCCHECK_REPORTS_DIR",
    "DOCCHECK_DEPLOYMENT_SUFFIX",
    "DOCCHECK_STORAGE_BLOCK",
}


def _bad_value(field: SettingsField) -> str | None:
    if field.env in BAD_BY_RULE:
        return BAD_BY_RULE[field.env]
    if "path_type='file'" in field.annotation:
        return "/nonexistent.json"
    for kind, bad in (("bool", "maybe"), ("float", "abc"), ("int", "1.5x")):
        if kind in field.annotation:
            return bad
    return None


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for field in fields():
        monkeypatch.delenv(field.env, raising=False)
    monkeypatch.delenv("DOCCHECK_ENV_FILE", raising=False)


@pytest.mark.parametrize("field", fields(), ids=lambda f: f.env)
def test_every_bad_value_is_one_line_naming_the_variable_and_exit_2(
    field: SettingsField, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = _bad_value(field)
    if bad is None:
        assert field.env in ANY_TEXT, f"{field.env}: give it a bad value in BAD_BY_RULE, or list it in ANY_TEXT"
        return
    assert field.env not in ANY_TEXT
    monkeypatch.setenv(field.env, bad)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    (line,) = raised.value.lines
    shown = SECRET_MASK if field.secret else repr(bad)  # a secret's bad value is never repeated
    assert line.startswith(f"{field.env}={shown} (environment): "), line
    # the command line: the same one line, exit 2, nothing else run (the ledger is not created)
    ledger = tmp_path / "ledger.db"
    result = CliRunner().invoke(app, ["purge", "--campaign", "c", "--database-url", f"sqlite:///{ledger}"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {line}"
    assert not ledger.exists()


def test_a_secrets_bad_value_is_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    """No field holding a secret refuses text today; a refusal would still mask it."""
    from pydantic import ValidationError

    from doccheck.config import Settings, _error

    secret = next(f for f in fields() if f.secret)
    with pytest.raises(ValidationError) as raised:
        Settings(**{secret.group: {secret.name: 42}})  # type: ignore[arg-type]
    line = str(_error(raised.value, {secret.env: "environment"}))
    assert "42" not in line and SECRET_MASK in line and line.startswith(secret.env)


def test_settings_follow_the_environment_though_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    from doccheck.config import setting

    monkeypatch.setenv("DOCCHECK_SHARD_RETRIES", "3")
    assert load_settings().shards.retries == 3 == setting("shards", "retries")
    monkeypatch.setenv("DOCCHECK_SHARD_RETRIES", "4")
    assert load_settings().shards.retries == 4 == setting("shards", "retries")
    monkeypatch.setenv("DOCCHECK_SHARD_RETRIES", "many")
    for _ in range(2):  # an error is not cached away
        with pytest.raises(SettingsError, match="DOCCHECK_SHARD_RETRIES='many'"):
            load_settings()


def test_flag_values_are_checked_and_named_too() -> None:
    with pytest.raises(SettingsError, match=r"^DOCCHECK_DATABASE_URL='nope' \(flag\): "):
        load_settings(database_url="nope")
    with pytest.raises(TypeError, match="unknown setting 'databse_url'"):
        load_settings(databse_url="sqlite:///x.db")


def _config_json(*args: str) -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(app, ["config", "--json", *args])
    assert result.exit_code == 0, result.output
    return {row["variable"]: row for row in json.loads(result.output)["settings"]}


def test_config_shows_each_source_winning_in_turn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    name = "DOCCHECK_DATABASE_URL"
    assert _config_json()[name] == {"variable": name, "setting": "ledger.database_url",
                                    "value": "sqlite:///doccheck.db", "source": "default"}  # fmt: skip
    env_file = tmp_path / "doccheck.env"
    env_file.write_text(f"{name}=sqlite:///from-file.db\n")
    monkeypatch.setenv("DOCCHECK_ENV_FILE", str(env_file))
    assert _config_json()[name]["value"] == "sqlite:///from-file.db"
    assert _config_json()[name]["source"] == "file"
    monkeypatch.setenv(name, "sqlite:///from-env.db")
    assert (_config_json()[name]["value"], _config_json()[name]["source"]) == ("sqlite:///from-env.db", "environment")
    flagged = _config_json("--database-url", "sqlite:///from-flag.db")[name]
    assert (flagged["value"], flagged["source"]) == ("sqlite:///from-flag.db", "flag")
    # a Prefect block's values sit between the environment and the flags
    block = {"database_url": "sqlite:///from-block.db"}
    assert load_settings(block=block).ledger.database_url == "sqlite:///from-block.db"
    assert sources_of(block=block)[name] == "Prefect block"
    assert load_settings(block=block, database_url="sqlite:///f.db").ledger.database_url == "sqlite:///f.db"


def test_config_names_the_settings_file_it_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The values marked ``file`` came from the file DOCCHECK_ENV_FILE names: config names it
    (absolute, a relative name read from the working directory), or says that none is read."""
    monkeypatch.chdir(tmp_path)
    text = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"}).output
    assert "settings file: none (DOCCHECK_ENV_FILE is not set)" in text.splitlines()
    assert json.loads(CliRunner().invoke(app, ["config", "--json"]).output)["env_file"] is None
    (tmp_path / "doccheck.env").write_text("DOCCHECK_BATCH_SIZE=7\n")
    monkeypatch.setenv("DOCCHECK_ENV_FILE", "doccheck.env")
    file = tmp_path / "doccheck.env"
    text = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"}).output
    assert f"settings file: {file} (DOCCHECK_ENV_FILE; the environment wins over it)" in text
    assert json.loads(CliRunner().invoke(app, ["config", "--json"]).output)["env_file"] == str(file)


@pytest.mark.parametrize(("name", "reason"), [("missing.env", "no such file"), (".", "not a file")])
def test_a_settings_file_that_is_not_there_stops_config_with_one_line(
    name: str, reason: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCCHECK_ENV_FILE", name)
    result = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        f"error: DOCCHECK_ENV_FILE={name!r}: {reason} ({tmp_path / name}); expected DOCCHECK_*=value lines"
    ]


def test_a_process_block_is_a_block_for_every_reader_until_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    # A flow run's DocCheckStorage block: the storage seam reads its options through setting(), on
    # any thread, as it reads DOCCHECK_STORAGE_OPTIONS; over the environment, under a flag.
    from pydantic import SecretStr

    monkeypatch.setenv("DOCCHECK_STORAGE_OPTIONS", '{"key": "from-env"}')
    monkeypatch.setenv("DOCCHECK_DATABASE_URL", "sqlite:///from-env.db")
    block = {"storage_options": SecretStr('{"key": "from-block"}'), "database_url": "sqlite:///from-block.db"}
    with process_block(block):
        assert setting("storage", "options").get_secret_value() == '{"key": "from-block"}'
        assert load_settings().ledger.database_url == "sqlite:///from-block.db"
        assert sources_of()["DOCCHECK_STORAGE_OPTIONS"] == "Prefect block"
        assert load_settings(database_url="sqlite:///flag.db").ledger.database_url == "sqlite:///flag.db"
        with process_block({"database_url": "sqlite:///inner.db"}):  # nested blocks merge
            assert load_settings().ledger.database_url == "sqlite:///inner.db"
            assert setting("storage", "options").get_secret_value() == '{"key": "from-block"}'
        assert load_settings().ledger.database_url == "sqlite:///from-block.db"
    assert setting("storage", "options").get_secret_value() == '{"key": "from-env"}'
    assert load_settings().ledger.database_url == "sqlite:///from-env.db"
    assert sources_of()["DOCCHECK_STORAGE_OPTIONS"] == "environment"


def test_a_process_block_names_known_settings_and_never_shows_a_secret() -> None:
    from pydantic import SecretStr

    with pytest.raises(TypeError, match="unknown setting 'storage_optons'"), process_block({"storage_optons": "{}"}):
        pass
    with process_block({"storage_options": SecretStr("not json")}), pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).startswith(f"DOCCHECK_STORAGE_OPTIONS={SECRET_MASK} (Prefect block)")
    assert "not json" not in str(raised.value)


def test_config_names_a_variable_no_setting_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_DATABSE_URL", "sqlite:///typo.db")
    result = CliRunner().invoke(app, ["config", "--json"])
    assert "DOCCHECK_DATABSE_URL" in json.loads(result.output)["unknown_variables"]
    text = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"}).output
    assert "warning: DOCCHECK_DATABSE_URL is set but no setting reads it" in text


def test_config_reads_the_named_block_through_the_integration(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import SecretStr

    import doccheck.pipeline

    class Fake:
        def block_settings(self, credentials: str | None, api_key_block: str | None) -> dict[str, object]:
            assert (credentials, api_key_block) == ("course-creds", None)
            return {"api_key": SecretStr("sk_from_block"), "base_url": "http://block.example/api/v1"}

    monkeypatch.setattr(doccheck.pipeline, "prefect_integration", lambda: Fake())  # where the commands look it up
    monkeypatch.setenv("DOCCHECK_CREDENTIALS_BLOCK", "course-creds")
    monkeypatch.setenv("DOCCHECK_BASE_URL", "http://env.example/api/v1")
    result = CliRunner().invoke(app, ["config", "--json", "--read-blocks"])
    assert result.exit_code == 0, result.output
    rows = {row["variable"]: row for row in json.loads(result.output)["settings"]}
    assert rows["DOCCHECK_BASE_URL"]["value"] == "http://block.example/api/v1"  # the block over the environment
    assert rows["DOCCHECK_BASE_URL"]["source"] == rows["DOCCHECK_API_KEY"]["source"] == "Prefect block"
    assert "sk_from_block" not in result.output
    flagged = CliRunner().invoke(app, ["config", "--json", "--read-blocks", "--base-url", "http://f.example/api/v1"])
    assert "http://f.example/api/v1" in flagged.output  # a flag over the block


def test_config_never_prints_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_API_KEY", "sk_live_do_not_show")
    monkeypatch.setenv("DOCCHECK_WEBHOOK_SECRET", "whsec_new,whsec_old")
    for args in (["config"], ["config", "--json"]):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        assert "sk_live" not in result.output and "whsec" not in result.output
        assert SECRET_MASK in result.output
    rows = _config_json()
    assert rows["DOCCHECK_API_KEY"]["value"] == SECRET_MASK and rows["DOCCHECK_API_KEY"]["source"] == "environment"
    assert len(load_settings().webhook.secrets()) == 2


def test_config_states_the_retry_worst_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCCHECK_SHARD_RETRIES", "0")
    result = CliRunner().invoke(app, ["config", "--json", "--submit-deadline", "100"])
    budget = json.loads(result.output)["retry_worst_case"]
    assert budget["submit_deadline_seconds"] == 100 and budget["shard_runs"] == 1
    assert budget["in_process_seconds"] == 100 + budget["client_seconds"] + budget["ledger_retry_seconds"]
    assert budget["sharded_seconds"] == budget["flow_seconds"] > budget["in_process_seconds"]
    text = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"}).output
    assert "Retry worst case for one document" in text


def test_no_module_but_the_model_reads_a_doccheck_variable() -> None:
    reads = r"(environ\.get|getenv)\(\s*[\"']DOCCHECK_|environ\[[\"']DOCCHECK_\w+[\"']\](?!\s*=[^=])"
    pattern = re.compile(reads + r"|envvar=\s*[\"']DOCCHECK_")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("doccheck", "flows", "tasks", "deployments", "prefect_doccheck")
        for path in (ROOT / folder).rglob("*.py")
        if path.name != "config.py" and pattern.search(path.read_text())
    ]
    assert offenders == []
