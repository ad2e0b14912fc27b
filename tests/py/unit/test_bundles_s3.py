"""The s3:// artifact store (etlcraft.engine.artifacts_s3) against a real S3-compatible HTTP server on loopback
(moto): the same put/fetch contract as the file:// store, each file once under <prefix>/sha256/<2 digits>/<digest>,
every download verified; a changed or missing object, an unknown bucket, a refused endpoint, missing credentials
and a missing boto3 each end in a message naming the store, what happened and what to do."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from etlcraft.config.loader import ProjectConfig, load_config
from etlcraft.core.errors import ConfigurationError
from etlcraft.engine.artifacts_s3 import S3Store
from etlcraft.engine.bundles import BundleIntegrityError, Manifest, build_manifest, materialize, open_store
from tests.py.support.s3 import Bucket, fake_credentials, moto_server, new_bucket, refused_endpoint
from tests.py.unit.test_bundles import CONFIG, _project


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Bucket:
    fake_credentials(monkeypatch, tmp_path)
    return new_bucket(endpoint)


def _config(tmp_path: Path, store: str, endpoint: str | None, extra: str = "") -> ProjectConfig:
    folder = tmp_path / "host"
    folder.mkdir(exist_ok=True)
    settings = f"  Endpoint_url: {endpoint}\n" if endpoint else ""
    (folder / "craft-connector.yml").write_text(CONFIG + f"Artifacts:\n  Store: {store}\n" + settings + extra)
    return load_config(folder)


def _store(tmp_path: Path, bucket: Bucket, prefix: str = "bundles") -> S3Store:
    store = open_store(bucket.url(prefix), _config(tmp_path, bucket.url(prefix), bucket.endpoint))
    assert isinstance(store, S3Store)
    return store


def _published(tmp_path: Path, store: S3Store) -> tuple[Manifest, Path]:
    project = _project(tmp_path / "p")
    manifest = build_manifest(project)
    assert all(store.put(d, project / f) for f, d in manifest.files.items())
    return manifest, project


def _requests(store: S3Store, *operations: str) -> list[str]:
    """The requests of these operations the store's client sends from now on."""
    sent: list[str] = []
    for operation in operations:
        store._s3().meta.events.register(f"before-call.s3.{operation}", lambda model, **_: sent.append(model.name))
    return sent


def test_put_then_materialize__keys_under_the_prefix__identical_files__a_second_put_uploads_nothing(
        tmp_path: Path, bucket: Bucket) -> None:
    store = _store(tmp_path, bucket, "team/bundles")
    manifest, project = _published(tmp_path, store)
    assert bucket.keys() == sorted(f"team/bundles/sha256/{d[:2]}/{d}" for d in manifest.files.values())
    sent = _requests(store, "PutObject", "GetObject", "HeadObject")
    assert not any(store.put(d, project / f) for f, d in manifest.files.items()), "each file is uploaded once"
    assert sent == ["HeadObject"] * len(manifest.files), "an intact object is known by its stored SHA-256"
    done = materialize(5, manifest, store, tmp_path / "cache")
    for relative in manifest.files:
        assert (done.path / relative).read_bytes() == (project / relative).read_bytes(), relative
    assert not list(done.path.rglob(".part-*")), "no temporary file is left behind"


def test_put__no_prefix__keys_at_the_bucket_root(tmp_path: Path, bucket: Bucket) -> None:
    store = _store(tmp_path, bucket, "")
    manifest, _ = _published(tmp_path, store)
    assert bucket.keys() == sorted(f"sha256/{d[:2]}/{d}" for d in manifest.files.values())


@pytest.mark.parametrize("checksum", [None, "SHA256"], ids=["client-default-checksum", "its-own-sha256"])
def test_an_object_changed_in_the_bucket__refused_at_fetch__publishing_again_repairs_it(
        tmp_path: Path, bucket: Bucket, checksum: str | None) -> None:
    store = _store(tmp_path, bucket)
    manifest, project = _published(tmp_path, store)
    digest = manifest.files["sql_files/a.sql"]
    key = f"bundles/sha256/{digest[:2]}/{digest}"
    bucket.client.put_object(Bucket=bucket.name, Key=key, Body=b"SELECT 'tampered'",
                             **({"ChecksumAlgorithm": checksum} if checksum else {}))
    with pytest.raises(BundleIntegrityError) as refused:
        materialize(3, manifest, store, tmp_path / "cache")
    message = str(refused.value)
    found = hashlib.sha256(b"SELECT 'tampered'").hexdigest()
    assert message.startswith("bundle 3, file sql_files/a.sql: the artifact store's copy has SHA-256 "
                              f"{found}, expected {digest} (object "
                              f"s3://{bucket.name}/{key} at {bucket.endpoint}); it was changed by hand or is damaged: "
                              "publish the project again (etl-craft bundle publish) and start a new run"), message
    assert not (tmp_path / "cache" / "3" / "sql_files" / "a.sql").exists(), "nothing unverified is left to run"
    assert not list((tmp_path / "cache").rglob(".part-*"))
    assert store.put(digest, project / "sql_files" / "a.sql"), "the changed object is not taken for intact"
    assert bucket.read(key) == b"SELECT 1 AS v"
    assert (materialize(3, manifest, store, tmp_path / "cache").path / "sql_files" / "a.sql").read_text() == \
        "SELECT 1 AS v"


def test_a_missing_object__names_the_bucket_the_key_and_publish(tmp_path: Path, bucket: Bucket) -> None:
    store = _store(tmp_path, bucket)
    manifest, _ = _published(tmp_path, store)
    digest = manifest.files["sql_files/sub/b.sql"]
    key = f"bundles/sha256/{digest[:2]}/{digest}"
    bucket.client.delete_object(Bucket=bucket.name, Key=key)
    with pytest.raises(ConfigurationError) as missing:
        materialize(4, manifest, store, tmp_path / "cache")
    assert not isinstance(missing.value, BundleIntegrityError)
    assert f"bundle 4, file sql_files/sub/b.sql: downloading s3://{bucket.name}/{key}" in str(missing.value)
    assert f"the bucket {bucket.name} has no object {key}; publish the project again" in str(missing.value)


def test_an_unknown_bucket__put_says_create_it_or_correct_the_store(tmp_path: Path, bucket: Bucket) -> None:
    url = "s3://no-such-bucket-for-etl-craft/bundles"
    store = open_store(url, _config(tmp_path, url, bucket.endpoint))
    (tmp_path / "f").write_text("x")
    digest = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    with pytest.raises(ConfigurationError, match="the bucket no-such-bucket-for-etl-craft does not exist; create "
                                                 "it, or correct the bucket in Artifacts.Store"):
        store.put(digest, tmp_path / "f")


def test_a_refused_endpoint__names_the_endpoint_and_the_remedy(tmp_path: Path, bucket: Bucket) -> None:
    wrong = refused_endpoint()
    store = open_store(bucket.url(), _config(tmp_path, bucket.url(), wrong))
    (tmp_path / "f").write_text("x")
    digest = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
    with pytest.raises(ConfigurationError) as refused:
        store.put(digest, tmp_path / "f")
    message = str(refused.value)
    assert f"in the artifact store {bucket.url()}: the service at {wrong} could not be reached" in message
    assert "Artifacts.Endpoint_url" in message and "try again" in message


def test_no_credentials__says_where_they_come_from(tmp_path: Path, bucket: Bucket,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    store = _store(tmp_path, bucket)
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigurationError, match="no AWS credentials were found; .*AWS_ACCESS_KEY_ID and "
                                                 r"AWS_SECRET_ACCESS_KEY .*never craft-connector\.yml"):
        store.put("2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", tmp_path / "f")


def test_without_boto3__open_store_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)  # what `import boto3` finds where it is not installed
    with pytest.raises(ConfigurationError, match=r"s3://etl-bundles/p is an S3 store, which needs boto3.*"
                                                 r"pip install 'etl-craft\[s3\]'"):
        open_store("s3://etl-bundles/p")


def test_a_file_store__never_imports_boto3(tmp_path: Path) -> None:
    script = ("import sys; from pathlib import Path; from etlcraft.engine.bundles import open_store, materialize\n"
              f"store = open_store({f'file://{tmp_path}/store'!r})\n"
              "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules, sorted(sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_an_intact_cache__the_s3_client_is_never_made(tmp_path: Path, bucket: Bucket) -> None:
    manifest, _ = _published(tmp_path, _store(tmp_path, bucket))
    materialize(6, manifest, _store(tmp_path, bucket), tmp_path / "cache")
    again = _store(tmp_path, bucket)
    assert materialize(6, manifest, again, tmp_path / "cache").refetched == ()
    assert again._client is None, "a task whose cached bundle is intact does not import boto3 nor connect"


@pytest.mark.parametrize(("url", "expected"), [
    ("s3:///bundles", "expected s3://BUCKET/PREFIX with a bucket name of 3 to 63"),
    ("s3://Upper_Case/p", "expected s3://BUCKET/PREFIX"),
    ("s3://etl-bundles/p?versionId=1", "expected s3://BUCKET/PREFIX"),
    ("s3://AKIAKEY:s3cr3t@etl-bundles/p", "holds user information (an @; the URL is not shown"),
])
def test_open_store__a_malformed_s3_url__refused_with_the_remedy(url: str, expected: str) -> None:
    with pytest.raises(ConfigurationError, match=expected.replace("?", r"\?").replace("(", r"\(")) as refused:
        open_store(url)
    assert "s3cr3t" not in str(refused.value)


def test_open_store__endpoint_and_region_from_the_artifacts_section(tmp_path: Path) -> None:
    config = _config(tmp_path, "s3://etl-bundles/a/b/", "http://minio.example.com:9000", "  Region: eu-west-3\n")
    store = open_store("s3://etl-bundles/a/b/", config)
    assert isinstance(store, S3Store)
    assert (store.bucket, store.prefix, store.endpoint_url, store.region) == \
        ("etl-bundles", "a/b", "http://minio.example.com:9000", "eu-west-3")
    assert store.key("ab" + "0" * 62) == "a/b/sha256/ab/ab" + "0" * 62
    bare = open_store("s3://etl-bundles")
    assert isinstance(bare, S3Store) and (bare.prefix, bare.endpoint_url, bare.region) == ("", None, None)


@pytest.mark.parametrize(("settings", "expected"), [
    ("  Store: file:///srv/a\n  Endpoint_url: http://minio:9000\n",
     "Artifacts.Endpoint_url is set but Artifacts.Store is 'file:///srv/a'; it applies to an s3:// store only"),
    ("  Store: file:///srv/a\n  Region: eu-west-1\n", "Artifacts.Region is set but Artifacts.Store"),
    ("  Store: s3://b-1/p\n  Endpoint_url: minio:9000\n",
     "Artifacts.Endpoint_url is 'minio:9000'; expected an http:// or https:// URL"),
    ("  Store: s3://b-1/p\n  Endpoint_url: http://AKIA:s3cr3t@minio:9000\n",
     "Artifacts.Endpoint_url holds user information (an @; the value is not shown, it may hold a password); give "
     "the endpoint without user information: the S3 credentials come from the standard AWS chain"),
    ("  Store: s3://b-1/p\n  Region: EU West\n", "Artifacts.Region is 'EU West'; expected a region name"),
])
def test_artifacts_s3_settings__checked_when_the_file_is_loaded(tmp_path: Path, settings: str, expected: str) -> None:
    (tmp_path / "craft-connector.yml").write_text(CONFIG + "Artifacts:\n" + settings)
    with pytest.raises(ConfigurationError) as refused:
        load_config(tmp_path)
    assert expected in str(refused.value) and "s3cr3t" not in str(refused.value)


def test_put__a_file_changed_since_the_manifest__refused_and_nothing_uploaded(tmp_path: Path, bucket: Bucket) -> None:
    store = _store(tmp_path, bucket)
    project = _project(tmp_path / "p")
    digest = build_manifest(project).files["sql_files/a.sql"]
    (project / "sql_files" / "a.sql").write_text("SELECT 'saved while publishing' AS v")
    with pytest.raises(ConfigurationError, match=f"a.sql has SHA-256 [0-9a-f]{{64}} now, expected {digest} when the "
                                                 "manifest was built: it changed during etl-craft bundle publish"):
        store.put(digest, project / "sql_files" / "a.sql")
    assert bucket.keys() == [], "no object holds other bytes than its name says"
