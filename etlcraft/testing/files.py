"""Confined, bounded reads for etl-craft test: every file is opened relative to the project root, one directory at
a time, without following symlinks (O_NOFOLLOW, dir_fd), and must be a regular file within its byte budget.
Fixtures are JSONL (one JSON object per line); manifests are YAML without duplicate keys, anchors or aliases.

A path that leaves the project (absolute, `..`, a backslash, a symlink anywhere on the way), a FIFO, a device or a
folder, or a file over its budget is a SafetyViolation (exit 4); a missing or unreadable file, bad UTF-8, a
duplicate key, NaN or Infinity, a blank or non-object JSONL line is an InvalidTest (exit 2). Messages name the
file relative to the project root and the line, never a value from the file.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import posixpath
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import Resolver
from yaml.scanner import Scanner

from etlcraft.testing.errors import InvalidTest, SafetyViolation

#: Hard caps: a manifest's limits may only lower them.
MAX_BYTES = 10 * 1024 * 1024
MAX_LINES = 10_000
MAX_ROWS = 10_000
MAX_LINE_BYTES = 1024 * 1024
TIMEOUT_SECONDS = 300
DEFAULT_TIMEOUT_SECONDS = 30
#: A manifest is at most this big.
MAX_MANIFEST_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_bytes: int = MAX_BYTES
    max_lines: int = MAX_LINES
    max_rows: int = MAX_ROWS
    max_line_bytes: int = MAX_LINE_BYTES
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS


class Deadline:
    """The test's time budget, checked between reads, rows and steps."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    def check(self, doing: str) -> None:
        if time.monotonic() > self.end:
            raise self.expired(doing)

    def expired(self, doing: str) -> SafetyViolation:
        return SafetyViolation("timeout", f"the test ran out of its {self.seconds:g} s budget "
                                          f"(limits.timeout_seconds) while {doing}; make the fixtures or the SELECT "
                                          f"smaller, or raise limits.timeout_seconds (at most {TIMEOUT_SECONDS})")


def project_path(base: str, reference: str, *, what: str) -> str:
    """`reference` (relative to the project folder `base`, both POSIX) as a normalized project-relative path.
    Absolute paths, backslashes, `..` and empty components are refused: they could leave the project."""
    if not reference or reference.startswith("/") or "\\" in reference or "\x00" in reference:
        raise SafetyViolation("path_outside_project", f"{what} must be a relative path inside the project (no "
                                                      "leading /, no backslash); write it relative to the manifest")
    parts = reference.split("/")
    if ".." in parts:
        raise SafetyViolation("path_traversal", f"{what} uses '..'; etl-craft test reads only files below the "
                                                "manifest's folder: move the file there")
    joined = posixpath.normpath(posixpath.join(base, reference)) if base else posixpath.normpath(reference)
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        raise SafetyViolation("path_outside_project", f"{what} leaves the project; keep the file inside it")
    return joined


@dataclass(frozen=True)
class ReadFile:
    path: str  # relative to the project root, POSIX
    data: bytes

    @property
    def sha256(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


def read_confined(root: Path, relative: str, *, max_bytes: int) -> ReadFile:
    """The bytes of project file `relative` (POSIX, normalized), read once through no-follow opens anchored at
    the project root; at most `max_bytes`."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise SafetyViolation("path_traversal", f"{relative} is not a file path inside the project")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    directory = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        for depth, part in enumerate(parts[:-1]):
            shown = "/".join(parts[:depth + 1])
            following = _open(part, flags | getattr(os, "O_DIRECTORY", 0), directory, shown, relative)
            os.close(directory)
            directory = following
        fd = _open(parts[-1], flags | getattr(os, "O_NONBLOCK", 0), directory, relative, relative)
    finally:
        os.close(directory)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SafetyViolation("not_a_regular_file", f"{relative} is not a regular file (a folder, FIFO, socket "
                                                        "or device); point the manifest at a regular file")
        if info.st_size > max_bytes:
            raise _too_big(relative, max_bytes)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise _too_big(relative, max_bytes)
            chunks.append(chunk)
    except OSError as exc:
        raise InvalidTest("file_unreadable", f"{relative} cannot be read ({_reason(exc)}); check the file and its "
                                             "permissions") from None
    finally:
        os.close(fd)
    return ReadFile(relative, b"".join(chunks))


def _too_big(relative: str, max_bytes: int) -> SafetyViolation:
    return SafetyViolation("file_too_large", f"{relative} is larger than its budget of {max_bytes:,} bytes; make "
                                             "it smaller or raise limits.max_bytes (at most "
                                             f"{MAX_BYTES:,})")


def _open(name: str, flags: int, directory: int, shown: str, relative: str) -> int:
    try:
        return os.open(name, flags, dir_fd=directory)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or _is_symlink(name, directory):
            raise SafetyViolation("symlink", f"{shown} is a symbolic link; etl-craft test follows none: put the "
                                             f"file itself at {relative}") from None
        if exc.errno == errno.ENOTDIR:
            raise SafetyViolation("not_a_regular_file", f"{shown} is not a folder; correct the path {relative}"
                                  ) from None
        if exc.errno == errno.ENOENT:
            raise InvalidTest("file_missing", f"{relative} does not exist; create it or correct the path in the "
                                              "manifest") from None
        raise InvalidTest("file_unreadable", f"{relative} cannot be opened ({_reason(exc)}); check the file and "
                                             "its permissions") from None


def _reason(exc: OSError) -> str:
    """The error's symbolic name (EACCES, EIO): never the OS message, which may hold an absolute path."""
    return errno.errorcode.get(exc.errno or 0, "I/O error")


def _is_symlink(name: str, directory: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode)
    except OSError:
        return False


# -- JSONL ---------------------------------------------------------------------------------------------------

def _no_constant(name: str) -> Any:
    raise ValueError(f"the constant {name} is not JSON")


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def parse_jsonl(file: ReadFile, limits: Limits, deadline: Deadline) -> list[dict[str, Any]]:
    """The rows of a JSONL fixture: every line one JSON object; the last line may lack its newline."""
    lines = file.data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) > limits.max_lines:
        raise SafetyViolation("too_many_lines", f"{file.path} has {len(lines):,} lines; the budget is "
                                                f"{limits.max_lines:,} (limits.max_lines)")
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        where = f"{file.path} line {number}"
        if len(line) > limits.max_line_bytes:
            raise SafetyViolation("line_too_long", f"{where} is longer than {limits.max_line_bytes:,} bytes "
                                                   "(limits.max_line_bytes); split the record or lower its size")
        if number % 256 == 0:
            deadline.check(f"reading {file.path}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidTest("not_utf8", f"{where} is not UTF-8 (byte {exc.start + 1} of the line); save the "
                                          "fixture as UTF-8") from None
        if not text.strip():
            raise InvalidTest("blank_line", f"{where} is blank; every line of a JSONL fixture is one JSON object: "
                                            "remove the empty line")
        try:
            row = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
        except ValueError as exc:
            reason = str(exc).split(": line")[0] if "appears twice" in str(exc) or "constant" in str(exc) \
                else "it is not valid JSON"
            raise InvalidTest("invalid_json", f"{where}: {reason}; write one JSON object per line") from None
        if not isinstance(row, dict):
            kind = "null" if row is None else type(row).__name__
            raise InvalidTest("not_an_object", f"{where} holds a JSON {kind}, not an object; write one JSON object "
                                               "per line")
        rows.append(row)
        if len(rows) > limits.max_rows:
            raise SafetyViolation("too_many_rows", f"{file.path} has more than {limits.max_rows:,} rows "
                                                   "(limits.max_rows)")
    return rows


# -- YAML ----------------------------------------------------------------------------------------------------

class _PythonParser(Reader, Scanner, Parser):
    """PyYAML's own reader, scanner and parser: used when PyYAML was built without libyaml."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)


try:
    from yaml._yaml import CParser as _Parser  # libyaml's, which yaml.CSafeLoader is built on
except ImportError:  # pragma: no cover (PyYAML without libyaml)
    _Parser = _PythonParser  # type: ignore[assignment,misc]


class _Loader(Composer, _Parser, SafeConstructor, Resolver):
    """Safe YAML without anchors or aliases, without duplicate keys, and with dates kept as text.

    libyaml scans and parses (when PyYAML has it); PyYAML's own Composer, ahead of the parser's in the method order,
    builds the nodes from its events, so compose_node below sees every anchor and alias (libyaml's composer would
    resolve them unseen). A manifest then reads several times faster than with the pure-Python SafeLoader, with the
    same refusals."""

    yaml_implicit_resolvers = {  # noqa: RUF012 (PyYAML's own class attribute)
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    source = ""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event: Any = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise InvalidTest("yaml_anchor", f"{self.source} line {event.start_mark.line + 1} uses a YAML anchor "
                                             "or alias; write the value out in full")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise InvalidTest("duplicate_key", f"{self.source} line {key_node.start_mark.line + 1}: the key "
                                                   f"{key!r} appears twice in one mapping; keep one")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def parse_yaml(file: ReadFile) -> Any:
    """The document of a YAML file (UTF-8), checked for duplicate keys, anchors and non-finite numbers."""
    try:
        text = file.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = file.data.count(b"\n", 0, exc.start) + 1
        raise InvalidTest("not_utf8", f"{file.path} line {line} is not UTF-8; save the file as UTF-8") from None
    loader = _Loader(text)
    loader.source = file.path
    try:
        document = loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise InvalidTest("invalid_yaml", f"{file.path}{where} is not valid YAML "
                                          f"({getattr(exc, 'problem', None) or 'syntax error'}); fix it") from None
    finally:
        loader.dispose()
    _refuse_non_finite(document, file.path)
    return document


def _refuse_non_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidTest("non_finite_number", f"{path} holds NaN or an infinity; use a finite number")
    if isinstance(value, dict):
        for item in value.values():
            _refuse_non_finite(item, path)
    elif isinstance(value, list):
        for item in value:
            _refuse_non_finite(item, path)
