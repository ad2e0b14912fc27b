"""The two kinds of expected failure of a hermetic test, and their exit codes (docs/adr/0007)."""

from __future__ import annotations

#: Exit codes of etl-craft test (its own; see docs/reference/exit-codes.md).
PASSED, EXPECTATION_FAILED, INVALID, SAFETY, INTERNAL = 0, 1, 2, 4, 5
#: Which exit code wins in a suite: the most severe.
SEVERITY = (PASSED, EXPECTATION_FAILED, INVALID, SAFETY, INTERNAL)


class HermeticError(Exception):
    """A test that cannot run. `code` is a stable snake_case name; the message names the file (relative to the
    project), what was found, what was expected and the remedy, and never a row value or an absolute path."""

    exit_code = INVALID

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class InvalidTest(HermeticError):
    """The manifest, a fixture, the metadata or the usage is invalid (exit 2)."""

    exit_code = INVALID


class SafetyViolation(HermeticError):
    """A path, symlink, size or time policy was violated (exit 4)."""

    exit_code = SAFETY


def worst(codes: list[int]) -> int:
    """The most severe exit code of a suite (5 > 4 > 2 > 1 > 0)."""
    return max(codes, key=SEVERITY.index, default=PASSED)
