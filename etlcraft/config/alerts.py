"""The Alerts section of craft-connector.yml: the channels alert rules name, and how deliveries are retried.

    Alerts:
      channels:
        ops:      {type: email, to: [ops@example.com]}        # through the Email section's relay
        hooks:    {type: webhook, url: https://example.com/etl, signing_key_variable: HOOK_KEY}
        incident: {type: webhook, url_variable: INCIDENT_URL}  # the URL itself is a secret
        chat:     {type: slack, url_variable: SLACK_URL}       # a Slack incoming-webhook URL is a secret
      max_attempts: 8

A channel's name is what CFG_ALERT_RULES.CHANNELS lists. Secrets (a signing key, a URL that carries a token, the
SMTP password) are names of variables, read from the environment or the project's .env when a delivery is made;
their values never reach a log, an alert document or the audit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from etlcraft.config.keys import ADDRESS_PATTERN, VARIABLE_PATTERN
from etlcraft.core.errors import ConfigurationError

CONFIG_FILE = "craft-connector.yml"
CHANNEL_TYPES = ("email", "webhook", "slack")
#: A channel's name: what CFG_ALERT_RULES.CHANNELS may list (its CHECK channels_are_names).
CHANNEL_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,127}$"
_FIELDS = {
    "email": {"type": False, "to": False},
    "webhook": {"type": True, "url": False, "url_variable": False, "signing_key_variable": False},
    "slack": {"type": True, "url_variable": True},
}
_URL = re.compile(r"^https?://[^\s/@]+(/\S*)?$")


@dataclass(frozen=True)
class AlertChannel:
    """One channel. `url_variable` and `signing_key_variable` name variables, never hold the secret."""

    name: str
    type: str
    to: tuple[str, ...] = ()
    url: str | None = None
    url_variable: str | None = None
    signing_key_variable: str | None = None


@dataclass(frozen=True)
class AlertsConfig:
    """The section Alerts, defaults filled in."""

    channels: Mapping[str, AlertChannel] = field(default_factory=dict)
    max_attempts: int = 8
    retry_delay_seconds: int = 30
    retry_backoff: float = 2.0
    retry_max_delay_seconds: int = 3600
    claim_seconds: int = 120
    timeout_seconds: int = 10


def check_channels(path: str, value: object) -> dict[str, dict[str, Any]]:
    """Alerts.channels checked and normalized (JSON-ready, for the configuration's fingerprint)."""
    if not isinstance(value, dict) or not value:
        raise ConfigurationError(
            f"{CONFIG_FILE}: {path} must be a mapping of channel names to channels, such as "
            "ops: {type: email, to: [ops@example.com]}; found " + repr(type(value).__name__ if value else value))
    return {_name(path, name): _channel(f"{path}.{name}", spec) for name, spec in value.items()}


def _name(path: str, name: object) -> str:
    if not isinstance(name, str) or not re.fullmatch(CHANNEL_NAME_PATTERN, name):
        raise ConfigurationError(
            f"{CONFIG_FILE}: {path} has the channel name {name!r}; expected a letter, then letters, digits, _ or - "
            "(at most 128): alert rules list channels by these names")
    return name


def _channel(path: str, spec: object) -> dict[str, Any]:
    if not isinstance(spec, dict) or spec.get("type") not in CHANNEL_TYPES:
        found = spec.get("type") if isinstance(spec, dict) else spec
        raise ConfigurationError(
            f"{CONFIG_FILE}: {path}.type is {found!r}; expected one of {', '.join(CHANNEL_TYPES)}")
    kind = str(spec["type"])
    fields = _FIELDS[kind]
    for name in spec:
        if name not in fields:
            raise ConfigurationError(
                f"{CONFIG_FILE}: {path} has the key {name!r}, which a {kind} channel does not take; its keys are "
                f"{', '.join(fields)}")
    missing = [name for name, required in fields.items() if required and name not in spec]
    if kind == "webhook" and ("url" in spec) == ("url_variable" in spec):
        raise ConfigurationError(
            f"{CONFIG_FILE}: {path} needs exactly one of url and url_variable (the name of a variable holding a URL "
            "that carries a token)")
    if missing:
        raise ConfigurationError(f"{CONFIG_FILE}: {path}.{missing[0]} is missing")
    checked: dict[str, Any] = {"type": kind}
    for name in fields:
        if name != "type" and name in spec:
            checked[name] = _field(f"{path}.{name}", name, spec[name])
    return checked


def _field(path: str, name: str, value: object) -> Any:
    if name == "to":
        if not isinstance(value, list) or not value or not all(
                isinstance(v, str) and re.fullmatch(ADDRESS_PATTERN, v.strip()) for v in value):
            raise ConfigurationError(
                f"{CONFIG_FILE}: {path} is {value!r}; expected a list of e-mail addresses such as [ops@example.com]")
        return [v.strip() for v in value]
    if name == "url":
        if not isinstance(value, str) or not _URL.match(value.strip()):
            raise ConfigurationError(
                f"{CONFIG_FILE}: {path} must be an http:// or https:// URL without user information (a URL that "
                "carries a token is a secret: name its variable in url_variable instead)")
        return value.strip()
    if not isinstance(value, str) or not re.fullmatch(VARIABLE_PATTERN, value.strip()):
        raise ConfigurationError(
            f"{CONFIG_FILE}: {path} must be the name of a variable (letters, digits, _), not the secret itself; "
            "put the secret in that variable (environment or .env)")
    return value.strip()


def channels_from(checked: Mapping[str, Mapping[str, Any]] | None) -> dict[str, AlertChannel]:
    """The AlertChannel objects of a checked Alerts.channels value."""
    return {name: AlertChannel(name=name, type=spec["type"], to=tuple(spec.get("to", ())), url=spec.get("url"),
                               url_variable=spec.get("url_variable"),
                               signing_key_variable=spec.get("signing_key_variable"))
            for name, spec in (checked or {}).items()}
