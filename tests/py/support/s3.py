"""A real S3-compatible HTTP server on loopback for the s3:// artifact store: moto's ThreadedMotoServer on a free
port of 127.0.0.1, a bucket of its own per test, and an environment whose only AWS settings are the fake
credentials set here (no profile, no config file, no instance metadata: nothing leaves this machine)."""

from __future__ import annotations

import logging
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: Every variable boto3 reads settings from that a test host might set; each test starts without them.
AWS_VARIABLES = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_REGION",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")


@dataclass(frozen=True)
class Bucket:
    """A bucket on the loopback server: its name, the server's endpoint and a client to look inside it."""

    name: str
    endpoint: str
    client: Any

    def url(self, prefix: str = "bundles") -> str:
        return f"s3://{self.name}/{prefix}" if prefix else f"s3://{self.name}"

    def keys(self) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=self.name).get("Contents", [])
        return sorted(str(o["Key"]) for o in listed)

    def read(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=self.name, Key=key)["Body"].read())


@contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 on 127.0.0.1 at a free port; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def fake_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Credentials moto accepts, through the environment as boto3's standard chain reads them, and nothing else."""
    for name in AWS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "etl-craft-test-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "etl-craft-test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def new_bucket(endpoint: str) -> Bucket:
    import boto3

    client = boto3.session.Session().client("s3", endpoint_url=endpoint)
    name = f"etl-craft-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=name)
    return Bucket(name, endpoint, client)


def refused_endpoint() -> str:
    """An http:// endpoint on loopback where nothing listens: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
