"""etl-craft's exceptions, their Engine DB error codes and their CLI exit codes, all from sql/errors.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from etlcraft.paths import read_sql_yaml


@dataclass(frozen=True)
class ErrorSpec:
    name: str
    code: str | None
    exit: int
    summary: str
    remedy: str = ""


@cache
def error_specs() -> dict[str, ErrorSpec]:
    """sql/errors.yaml by error name."""
    raw = read_sql_yaml("errors.yaml")
    return {e["name"]: ErrorSpec(**e) for e in raw["errors"]}


class EtlCraftError(Exception):
    """Base of every error etl-craft reports; the message names the object, the value, what was expected and
    the remedy."""

    kind: ClassVar[str] = "GENERAL"

    @property
    def exit_code(self) -> int:
        return error_specs()[self.kind].exit

    @property
    def code(self) -> str | None:
        return error_specs()[self.kind].code

    @property
    def remedy(self) -> str:
        """What to do about an error of this kind in general (sql/errors.yaml); the message names the specific fix."""
        return error_specs()[self.kind].remedy


class UsageError(EtlCraftError):
    kind = "USAGE"


class ConfigurationError(EtlCraftError):
    kind = "CONFIGURATION"


class EngineDbError(EtlCraftError):
    kind = "ENGINE_DB"


class EngineUnreachableError(EngineDbError):
    """The Engine DB could not be reached, or dropped the connection (a restart, a network cut): nothing of the
    statement was kept, and the same call may succeed once the server is back (etlcraft.engine.outage)."""


class MigrationError(EtlCraftError):
    kind = "MIGRATION"


class ScriptError(EtlCraftError):
    """An ingestion script that cannot be loaded or whose result is refused; retrying the same script can't help."""

    kind = "SCRIPT"
    retryable = False


class RunFailedError(EtlCraftError):
    """The run (or task) a command ran ended FAILED or CANCELLED; the message says which tasks failed."""

    kind = "RUN_FAILED"


class IncompleteError(EtlCraftError):
    """A command left a run unfinished; the message says why and how to resume it."""

    kind = "INCOMPLETE"


class WaitingError(EtlCraftError):
    kind = "WAITING"


class WarehouseError(EtlCraftError):
    """No connection to the warehouse could be had (no answer in time, refused, a login refused, a DuckDB file held
    by another process); the message names the Warehouse section and its secret variable. It may work next time."""

    kind = "WAREHOUSE"


class InjectedFaultError(EtlCraftError):
    kind = "INJECTED_FAULT"


class SqlGuardError(EtlCraftError):
    """A warehouse task refused before it changed anything: a SQL task's SELECT rows or columns, parameters or
    target shape break a rule, or a BUSINESS_RULES task's rules or table cannot be judged as configured.
    Retrying cannot help; the message names the fix."""

    kind = "SQL_GUARD"
    retryable = False


class TokenError(EtlCraftError):
    """An HTTP API request refused before it did anything: its bearer token is missing, unknown, expired or
    revoked (HTTP 401), or its role does not allow the request (HTTP 403)."""


class TokenUnknownError(TokenError):
    kind = "TOKEN_UNKNOWN"


class TokenExpiredError(TokenError):
    kind = "TOKEN_EXPIRED"


class TokenRevokedError(TokenError):
    kind = "TOKEN_REVOKED"


class ForbiddenError(TokenError):
    kind = "FORBIDDEN"


class ServerUnreachableError(EtlCraftError):
    """The etl-craft HTTP API named by --server could not be reached, or answered with something that is not one of
    its documents; nothing was asked of the Engine DB (etlcraft.cli.remote)."""

    kind = "SERVER_UNREACHABLE"


class EngineRuleError(EtlCraftError):
    """A change the Engine DB refused by one of its own rules (an error with an ECnnn code)."""


class EngineOnlyWriteError(EngineRuleError):
    kind = "ENGINE_ONLY_WRITE"


class AppendOnlyError(EngineRuleError):
    kind = "APPEND_ONLY"


class StampColumnError(EngineRuleError):
    kind = "STAMP_COLUMN"


class IllegalTransitionError(EngineRuleError):
    kind = "ILLEGAL_TRANSITION"


class StaleTransitionError(EngineRuleError):
    kind = "STALE_TRANSITION"


class NotFoundError(EngineRuleError):
    kind = "NOT_FOUND"


class AmbiguousError(EngineRuleError):
    kind = "AMBIGUOUS"


class RefusedByPolicyError(EngineRuleError):
    kind = "REFUSED_BY_POLICY"


def _subclasses(cls: type[EtlCraftError]) -> list[type[EtlCraftError]]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def error_classes() -> dict[str, type[EtlCraftError]]:
    """Every concrete error class by its kind (the name in sql/errors.yaml)."""
    classes: list[type[EtlCraftError]] = [EtlCraftError, *_subclasses(EtlCraftError)]
    return {cls.kind: cls for cls in classes if cls not in (EngineRuleError, TokenError)}


def class_for_code(code: str) -> type[EtlCraftError] | None:
    """The exception class of an Engine DB error code such as EC020."""
    by_code = {spec.code: spec.name for spec in error_specs().values() if spec.code}
    name = by_code.get(code)
    return error_classes()[name] if name else None
