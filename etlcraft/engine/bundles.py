"""Pinned project bundles: the manifest of a project's files, the artifact store they are uploaded to, and the
cache task processes run them from.

A bundle is the set of files a task process reads: sql_files/, ingestion_scripts/ and craft-connector.yml as
written (secrets stay the names of their variables). Its manifest maps each relative path to the SHA-256 of the
file; the store keeps each file once, named by that hash, so publishing unchanged files uploads nothing. A run pins
its project's latest bundle when it is created (AUD_PIPELINES_RUN_LOG.BUNDLE_ID) and every attempt materializes it
under the cache, verifying every file's hash: a cached file that is missing or changed is fetched again from the
store and verified again; a store file whose hash differs from the manifest's is refused. Two stores keep the same
contract (ArtifactStore): a folder (file://, FileStore, here) and an S3-compatible bucket (s3://,
etlcraft.engine.artifacts_s3, the optional s3 extra).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from etlcraft.config.loader import CONFIG_FILE, ProjectConfig
from etlcraft.core.errors import ConfigurationError

SQL_DIR, SCRIPTS_DIR = "sql_files", "ingestion_scripts"
#: The environment variable that moves the cache (tests; hosts whose home is read-only).
CACHE_ENV = "ETL_CRAFT_BUNDLE_CACHE"
_CHUNK = 1 << 20


class BundleIntegrityError(ConfigurationError):
    """A bundle's file, as the store holds it, is not the file the manifest names: running it again cannot help."""

    retryable = False


@dataclass(frozen=True)
class Manifest:
    """A bundle's files: relative path (POSIX) -> SHA-256, and their sizes. `text` is the canonical JSON that is
    recorded in AUD_PROJECT_BUNDLES.MANIFEST; `sha256` is its hash."""

    files: dict[str, str]
    sizes: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def text(self) -> str:
        return json.dumps(self.files, sort_keys=True, separators=(",", ":"))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())

    @classmethod
    def parse(cls, text: str, bundle_id: int) -> Manifest:
        files = json.loads(text)
        if not isinstance(files, dict) or not all(_valid_entry(k, v) for k, v in files.items()):
            raise BundleIntegrityError(f"bundle {bundle_id}: its MANIFEST is not a JSON object of relative paths to "
                                       "SHA-256 digests; publish the project again with etl-craft bundle publish")
        return cls(files)


def _valid_entry(path: object, digest: object) -> bool:
    if not isinstance(path, str) or not isinstance(digest, str) or len(digest) != 64:
        return False
    parts = Path(path).parts
    return bool(parts) and not Path(path).is_absolute() and ".." not in parts


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def project_files(project_dir: Path) -> Iterator[Path]:
    """The files of a bundle, relative to the project: craft-connector.yml, then every file under sql_files/ and
    ingestion_scripts/ but hidden ones and Python's caches."""
    yield Path(CONFIG_FILE)
    for folder in (SQL_DIR, SCRIPTS_DIR):
        root = project_dir / folder
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            relative = path.relative_to(project_dir)
            if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in relative.parts) \
                    and path.suffix != ".pyc":
                yield relative


def build_manifest(project_dir: Path) -> Manifest:
    files, sizes = {}, {}
    for relative in project_files(project_dir):
        path = project_dir / relative
        if not path.is_file():
            raise ConfigurationError(f"{path} does not exist; a bundle holds the project's {CONFIG_FILE}: run "
                                     "etl-craft bundle publish in a project folder, or pass --project DIR")
        files[relative.as_posix()] = sha256_of(path)
        sizes[relative.as_posix()] = path.stat().st_size
    return Manifest(files, sizes)


class ArtifactStore(Protocol):
    """What publishing and materializing need of a store (FileStore, etlcraft.engine.artifacts_s3.S3Store): each
    file kept once under sha256/<first two digits>/<digest>, every copy verified against the digest."""

    url: str

    def put(self, digest: str, source: Path) -> bool:
        """Upload `source` under `digest`; False when the store holds it already, intact."""
        ...

    def fetch(self, digest: str, target: Path, what: str) -> None:
        """Write the file `digest` to `target` atomically, its SHA-256 verified first (BundleIntegrityError when it
        differs); `what` names the file in messages."""
        ...


class FileStore:
    """An artifact store in a folder (file:// URL): each file at sha256/<first two digits>/<digest>."""

    def __init__(self, url: str, root: Path) -> None:
        self.url, self.root = url, root

    def _path(self, digest: str) -> Path:
        return self.root / "sha256" / digest[:2] / digest

    def put(self, digest: str, source: Path) -> bool:
        """Upload `source` under `digest`; False when the store holds it already (and it is intact)."""
        target = self._path(digest)
        if target.is_file() and sha256_of(target) == digest:
            return False
        _copy_atomically(source, target)
        return True

    def fetch(self, digest: str, target: Path, what: str) -> None:
        """Copy the file `digest` to `target`, verifying its hash first; `what` names it in messages."""
        source = self._path(digest)
        if not source.is_file():
            raise ConfigurationError(f"{what}: the artifact store {self.url} has no file {digest} (expected at "
                                     f"{source}); publish the project again with etl-craft bundle publish")
        found = sha256_of(source)
        if found != digest:
            raise BundleIntegrityError(f"{what}: the artifact store's copy {source} has SHA-256 {found}, expected "
                                       f"{digest}; the store was changed by hand or is damaged: publish the project "
                                       "again (etl-craft bundle publish) and start a new run")
        _copy_atomically(source, target)


def _copy_atomically(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    os.close(fd)
    try:
        shutil.copyfile(source, temporary)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep a shared store or cache from other users
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def open_store(url: str, config: ProjectConfig | None = None) -> ArtifactStore:
    """The store named by `url` (Artifacts.Store, or a bundle's STORE_URL): file:// and an absolute folder, or
    s3://BUCKET/PREFIX, reached with `config`'s Artifacts.Endpoint_url and Region (else the standard AWS chain)."""
    parsed = urlparse(url)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost") and parsed.path.startswith("/"):
        return FileStore(url, Path(unquote(parsed.path)))
    if parsed.scheme == "s3":
        from etlcraft.engine.artifacts_s3 import S3Store

        artifacts = config.artifacts if config is not None else None
        return S3Store.from_url(url, artifacts)
    raise ConfigurationError(f"Artifacts.Store is {url!r}; expected file:// and the absolute path of a folder, such "
                             "as file:///srv/etl-craft/artifacts, or s3://BUCKET/PREFIX: correct it in "
                             "craft-connector.yml")


def cache_root(config: ProjectConfig | None) -> Path:
    """Where bundles are materialized: Artifacts.Cache_dir, else $ETL_CRAFT_BUNDLE_CACHE, else
    ~/.cache/etl-craft/bundles."""
    if config is not None and config.artifacts is not None and config.artifacts.cache_dir is not None:
        return config.artifacts.cache_dir
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path.home() / ".cache" / "etl-craft" / "bundles"


@dataclass(frozen=True)
class Materialized:
    """A bundle ready to run from: its folder, and the cached files that had to be fetched again (missing or
    changed), each with what was found."""

    path: Path
    refetched: tuple[str, ...]


def materialize(bundle_id: int, manifest: Manifest, store: ArtifactStore, root: Path) -> Materialized:
    """Make `root`/<bundle_id> hold exactly the manifest's files, every hash verified."""
    folder = root / str(bundle_id)
    fresh = not folder.is_dir()  # a first materialization fetches every file: nothing is missing yet
    refetched = []
    for relative, digest in sorted(manifest.files.items()):
        target = folder / relative
        if target.is_file():
            found = sha256_of(target)
            if found == digest:
                continue
            refetched.append(f"{relative} (cached copy has SHA-256 {found}, expected {digest})")
        elif not fresh:
            refetched.append(f"{relative} (missing from the cache)")
        store.fetch(digest, target, f"bundle {bundle_id}, file {relative}")
        found = sha256_of(target)
        if found != digest:
            raise BundleIntegrityError(f"bundle {bundle_id}, file {relative}: the copy in {folder} has SHA-256 "
                                       f"{found} right after it was fetched, expected {digest}; something else "
                                       f"writes the cache folder {root}: give this host a cache of its own "
                                       f"(Artifacts.Cache_dir or ${CACHE_ENV})")
    return Materialized(folder, tuple(refetched))


@dataclass(frozen=True)
class MissingImport:
    script: str
    line: int
    module: str


def missing_imports(scripts_dir: Path) -> list[MissingImport]:
    """The imports of the scripts under `scripts_dir` whose top-level module this interpreter cannot find: each
    script is parsed (ast), never imported. Relative imports are left out (they name the scripts' own package)."""
    found: list[MissingImport] = []
    for path in sorted(scripts_dir.rglob("*.py")) if scripts_dir.is_dir() else []:
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if node.level == 0 and node.module else []
            for name in names:
                top = name.split(".")[0]
                if top not in sys.builtin_module_names and _absent(top):
                    found.append(MissingImport(path.relative_to(scripts_dir).as_posix(), node.lineno, top))
    return found


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):
        return True
