"""The S3-compatible artifact store (Artifacts.Store: s3://BUCKET/PREFIX): the same contract as the file:// store of
etlcraft.engine.bundles, each file once at <PREFIX>/sha256/<first two digits>/<digest>, every download verified.

boto3 is the optional `s3` extra: it is imported only when an s3:// store is first used, so the file:// store and
every other command start without it. Credentials come from boto3's standard chain (AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role), never from craft-connector.yml.

Is an object already there, intact? `put` asks HEAD for the checksum S3 keeps with the object (ChecksumMode
ENABLED): every upload sends its SHA-256 (ChecksumAlgorithm SHA256), which S3 checks against the bytes it receives
and stores, and any later overwrite replaces. One request per file decides, without downloading it. A service or
object without a SHA-256 checksum (an older S3-compatible service; an object written by another tool) is
downloaded and hashed instead. Either way `fetch` verifies every byte it writes to the cache.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.bundles import BundleIntegrityError

if TYPE_CHECKING:
    from etlcraft.config.loader import ArtifactsConfig

#: S3's rule for bucket names: 3 to 63 lower-case letters, digits, dots and hyphens, a letter or digit at each end.
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"
EXTRA = "pip install 'etl-craft[s3]'"
CREDENTIALS = ("boto3's standard chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment, AWS_PROFILE, "
               "or the host's instance role (never craft-connector.yml)")
_CHUNK = 1 << 20
#: Connection refused or a silent endpoint is reported after a few seconds, not after botocore's long defaults.
_CLIENT_SETTINGS: dict[str, Any] = {"connect_timeout": 10, "read_timeout": 60,
                                    "retries": {"mode": "standard", "max_attempts": 3}}


class S3Store:
    """An artifact store in an S3 bucket (or an S3-compatible service at `endpoint_url`)."""

    def __init__(self, url: str, bucket: str, prefix: str, endpoint_url: str | None = None,
                 region: str | None = None) -> None:
        self.url, self.bucket, self.prefix = url, bucket, prefix
        self.endpoint_url, self.region = endpoint_url, region
        self._client: Any = None

    @classmethod
    def from_url(cls, url: str, artifacts: ArtifactsConfig | None) -> S3Store:
        """s3://BUCKET[/PREFIX]; the endpoint and region of `artifacts` (the host's Artifacts section) when set."""
        parsed = urlparse(url)
        if "@" in parsed.netloc:
            raise ConfigurationError("Artifacts.Store holds user information (an @; the URL is not shown, it may "
                                     "hold a secret); write s3://BUCKET/PREFIX: the credentials come from "
                                     f"{CREDENTIALS}")
        if not re.fullmatch(BUCKET_PATTERN, parsed.netloc) or parsed.query or parsed.fragment:
            raise ConfigurationError(f"Artifacts.Store is {url!r}; expected s3://BUCKET/PREFIX with a bucket name of "
                                     "3 to 63 lower-case letters, digits, dots and hyphens (the prefix is optional), "
                                     "such as s3://etl-artifacts/bundles: correct it in craft-connector.yml")
        if importlib.util.find_spec("boto3") is None:
            raise ConfigurationError(f"the artifact store {url} is an S3 store, which needs boto3, and this Python "
                                     f"environment has none: {EXTRA} on this host")
        prefix = "/".join(part for part in parsed.path.split("/") if part)
        endpoint = artifacts.endpoint_url if artifacts is not None else None
        return cls(url, parsed.netloc, prefix, endpoint, artifacts.region if artifacts is not None else None)

    def key(self, digest: str) -> str:
        return "/".join(p for p in (self.prefix, "sha256", digest[:2], digest) if p)

    def where(self, digest: str) -> str:
        """The object, as messages name it: s3://bucket/key, and the endpoint when it is not AWS's."""
        on = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"s3://{self.bucket}/{self.key(digest)}{on}"

    def put(self, digest: str, source: Path) -> bool:
        """Upload `source` under `digest`; False when the bucket holds it already, intact."""
        with self._errors("checking", digest):
            if self._intact(digest):
                return False
        with source.open("rb") as body, self._errors("uploading", digest):
            found = _sha256_of_stream(body)
            if found != digest:
                raise ConfigurationError(f"{source} has SHA-256 {found} now, expected {digest} when the manifest was "
                                         "built: it changed during etl-craft bundle publish; publish again")
            body.seek(0)
            self._s3().put_object(Bucket=self.bucket, Key=self.key(digest), Body=body, ChecksumAlgorithm="SHA256",
                                  ChecksumSHA256=_b64(digest), Metadata={"sha256": digest})
        return True

    def fetch(self, digest: str, target: Path, what: str) -> None:
        """Download the object `digest` to a temporary file beside `target`, verify its SHA-256, then rename it."""
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out, self._errors("downloading", digest, what):
                found = self._download(digest, out)
            if found != digest:
                raise BundleIntegrityError(
                    f"{what}: the artifact store's copy has SHA-256 {found}, expected {digest} (object "
                    f"{self.where(digest)}); it was changed by hand or is damaged: publish the project again "
                    "(etl-craft bundle publish) and start a new run")
            os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep a shared cache from other users
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _intact(self, digest: str) -> bool:
        """Whether the object exists with this content: S3's stored SHA-256 when it keeps one, else a download."""
        from botocore.exceptions import ClientError

        try:
            head = self._s3().head_object(Bucket=self.bucket, Key=self.key(digest), ChecksumMode="ENABLED")
        except ClientError as exc:
            if _status(exc) == 404:
                return False
            raise
        stored = head.get("ChecksumSHA256")
        if stored is not None and "-" not in stored:  # a multipart upload's checksum is of its parts: not comparable
            return bool(stored == _b64(digest))
        hashed = hashlib.sha256()
        for chunk in self._s3().get_object(Bucket=self.bucket, Key=self.key(digest))["Body"].iter_chunks(_CHUNK):
            hashed.update(chunk)
        return hashed.hexdigest() == digest

    def _download(self, digest: str, out: Any) -> str:
        hashed = hashlib.sha256()
        for chunk in self._s3().get_object(Bucket=self.bucket, Key=self.key(digest))["Body"].iter_chunks(_CHUNK):
            hashed.update(chunk)
            out.write(chunk)
        return hashed.hexdigest()

    def _s3(self) -> Any:
        """The boto3 client, made on first use: a task whose cached bundle is intact never imports boto3."""
        if self._client is None:
            try:
                import boto3
                from botocore.config import Config
            except ImportError as exc:
                raise ConfigurationError(f"the artifact store {self.url} is an S3 store, which needs boto3, and this "
                                         f"Python environment cannot import it ({exc}): {EXTRA} on this host") from exc
            # MinIO, Ceph and their kind serve path-style requests on any host name; AWS keeps its default.
            style = {"s3": {"addressing_style": "path"}} if self.endpoint_url else {}
            config = Config(**_CLIENT_SETTINGS, **style)
            self._client = boto3.session.Session().client("s3", endpoint_url=self.endpoint_url,
                                                          region_name=self.region, config=config)
        return self._client

    @contextmanager
    def _errors(self, doing: str, digest: str, what: str | None = None) -> Iterator[None]:
        """botocore's errors as etl-craft's: the store, the object, what happened and what to do."""
        from botocore import exceptions as boto

        subject = f"{what}: " if what else ""
        place = f"{subject}{doing} {self.where(digest)} in the artifact store {self.url}"
        try:
            yield
        except boto.ClientError as exc:
            raise _client_error(place, exc, self, digest, what is not None) from exc
        except boto.NoCredentialsError as exc:
            raise ConfigurationError(f"{place}: no AWS credentials were found; set them for this process through "
                                     f"{CREDENTIALS}") from exc
        except boto.FlexibleChecksumError as exc:
            raise BundleIntegrityError(f"{place}: the object's bytes do not match the checksum the store keeps with "
                                       f"it ({exc}); the object is damaged: publish the project again (etl-craft "
                                       "bundle publish) and start a new run") from exc
        except (boto.EndpointConnectionError, boto.ConnectTimeoutError, boto.ReadTimeoutError) as exc:
            endpoint = self.endpoint_url or "AWS S3 (no Artifacts.Endpoint_url)"
            raise ConfigurationError(f"{place}: the service at {endpoint} could not be reached ({exc}); check that "
                                     "it runs and that Artifacts.Endpoint_url (or $AWS_ENDPOINT_URL) names it, then "
                                     "try again") from exc
        except boto.BotoCoreError as exc:
            raise ConfigurationError(f"{place} failed: {exc}; check the store's settings (Artifacts.Store, "
                                     "Endpoint_url, Region) and the network, then try again") from exc


def _client_error(place: str, exc: Any, store: S3Store, digest: str, fetching: bool) -> ConfigurationError:
    error = exc.response.get("Error", {})
    code, status = str(error.get("Code", "")), _status(exc)
    if code == "NoSuchBucket":
        return ConfigurationError(f"{place}: the bucket {store.bucket} does not exist; create it, or correct the "
                                  "bucket in Artifacts.Store (and Artifacts.Endpoint_url if it is on another service)")
    if fetching and (code in ("NoSuchKey", "404") or status == 404):
        return ConfigurationError(f"{place}: the bucket {store.bucket} has no object {store.key(digest)}; "
                                  "publish the project again with etl-craft bundle publish")
    if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "403") or status == 403:
        return ConfigurationError(f"{place}: the store refused the credentials ({code or status}: "
                                  f"{error.get('Message', '')}); check the credentials this process gets from "
                                  f"{CREDENTIALS}, and that they may read and write the bucket")
    return ConfigurationError(f"{place}: the store answered {code or status} ({error.get('Message', '')}); "
                              "check Artifacts.Store, Endpoint_url and Region, then try again")


def _status(exc: Any) -> int | None:
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return int(status) if status is not None else None


def _b64(digest: str) -> str:
    """A hex SHA-256 as S3's checksum headers write it (base64 of the 32 bytes)."""
    return base64.b64encode(bytes.fromhex(digest)).decode("ascii")


def _sha256_of_stream(stream: Any) -> str:
    hashed = hashlib.sha256()
    for chunk in iter(lambda: stream.read(_CHUNK), b""):
        hashed.update(chunk)
    return hashed.hexdigest()
