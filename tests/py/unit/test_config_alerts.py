"""The Alerts section of craft-connector.yml (etlcraft/config/alerts.py): channels by name, retry settings, and no
secret ever written in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from etlcraft.config.alerts import AlertChannel, AlertsConfig
from etlcraft.config.loader import load_config
from etlcraft.core.errors import ConfigurationError

BASE = "Engine:\n  dialect: sqlite\n  path: engine.db\nWarehouse:\n  dialect: duckdb\n  path: warehouse.duckdb\n"


def load(tmp_path: Path, alerts: str) -> AlertsConfig | None:
    (tmp_path / "craft-connector.yml").write_text(BASE + alerts, encoding="utf-8")
    return load_config(tmp_path).alerts


def test_alerts__channels_and_settings_are_read_with_defaults(tmp_path: Path) -> None:
    alerts = load(tmp_path, "Alerts:\n  channels:\n    ops: {type: email, to: [ops@example.com]}\n"
                            "    hooks: {type: webhook, url: 'https://h.example.com/x', signing_key_variable: KEY}\n"
                            "    chat: {type: slack, url_variable: SLACK_URL}\n  max_attempts: 4\n")
    assert alerts == AlertsConfig(channels={
        "ops": AlertChannel("ops", "email", to=("ops@example.com",)),
        "hooks": AlertChannel("hooks", "webhook", url="https://h.example.com/x", signing_key_variable="KEY"),
        "chat": AlertChannel("chat", "slack", url_variable="SLACK_URL")}, max_attempts=4)
    assert load(tmp_path, "") is None


@pytest.mark.parametrize(("channels", "message"), [
    ("{ops: {type: pager}}", "Alerts.channels.ops.type is 'pager'; expected one of email, webhook, slack"),
    ("{'bad name': {type: email}}", "has the channel name 'bad name'; expected a letter, then letters"),
    ("{chat: {type: slack, url: 'https://hooks.slack.com/services/T/B/secret'}}",
     "Alerts.channels.chat has the key 'url', which a slack channel does not take; its keys are type, url_variable"),
    ("{h: {type: webhook}}", "Alerts.channels.h needs exactly one of url and url_variable"),
    ("{h: {type: webhook, url: 'https://u:pw@h.example.com'}}", "must be an http:// or https:// URL without user"),
    ("{h: {type: webhook, url: 'https://h.example.com', signing_key_variable: 's3cr3t key!'}}",
     "Alerts.channels.h.signing_key_variable must be the name of a variable (letters, digits, _), not the secret"),
    ("{ops: {type: email, to: [nobody]}}", "Alerts.channels.ops.to is ['nobody']; expected a list of e-mail"),
    ("{}", "Alerts.channels must be a mapping of channel names to channels"),
])
def test_alerts__a_broken_channel_is_refused_naming_it(tmp_path: Path, channels: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match="craft-connector.yml: ") as refused:
        load(tmp_path, f"Alerts:\n  channels: {channels}\n")
    assert message in str(refused.value)
    assert "s3cr3t" not in str(refused.value) and "pw@" not in str(refused.value)


def test_alerts__channels_are_required_in_the_section(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="Alerts.channels is missing"):
        load(tmp_path, "Alerts:\n  max_attempts: 3\n")
