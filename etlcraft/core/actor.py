"""Who is acting: every write to the Engine DB names its actor and the actor's kind.

The CLI resolves the human once per command (ETL_CRAFT_ACTOR, else user@host); the engine acting on its own
(finalizing a run, reconciling) acts as SYSTEM. `acting_as` scopes an actor for the code below it.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import unicodedata
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import ConfigurationError

ACTOR_VARIABLE = "ETL_CRAFT_ACTOR"
MAX_ACTOR_LENGTH = 128


def check_actor_name(name: str, *, source: str) -> None:
    """Refuse an actor name that is empty, longer than 128 characters or holds control characters."""
    if not name.strip():
        raise ConfigurationError(f"{source} is empty; set it to a name such as alice@laptop or github:alice")
    if len(name) > MAX_ACTOR_LENGTH:
        raise ConfigurationError(
            f"{source} is {len(name)} characters long; at most {MAX_ACTOR_LENGTH} are allowed: shorten it"
        )
    bad = [ch for ch in name if unicodedata.category(ch).startswith("C")]
    if bad:
        raise ConfigurationError(
            f"{source} holds the control character {bad[0]!r}; use printable characters only"
        )


@dataclass(frozen=True)
class Actor:
    name: str
    kind: ActorKind

    def __post_init__(self) -> None:
        check_actor_name(self.name, source="the actor name")


SYSTEM = Actor("etl-craft", ActorKind.SYSTEM)

_current: ContextVar[Actor] = ContextVar("etl_craft_actor", default=SYSTEM)


def resolve_actor(environ: Mapping[str, str] | None = None) -> Actor:
    """The human running this command: ETL_CRAFT_ACTOR when set, else user@host."""
    env = os.environ if environ is None else environ
    if ACTOR_VARIABLE in env:
        name = env[ACTOR_VARIABLE]
        check_actor_name(name, source=f"the variable {ACTOR_VARIABLE}")
        return Actor(name, ActorKind.HUMAN)
    try:
        name = f"{getpass.getuser()}@{socket.gethostname()}"
    except (OSError, KeyError) as exc:
        raise ConfigurationError(
            f"cannot tell who is acting: no user name for this process ({exc}); set {ACTOR_VARIABLE}"
        ) from exc
    check_actor_name(name, source=f"the actor {name[:40]!r}... from user@host (set {ACTOR_VARIABLE} instead)")
    return Actor(name, ActorKind.HUMAN)


def current_actor() -> Actor:
    return _current.get()


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    token = _current.set(actor)
    try:
        yield actor
    finally:
        _current.reset(token)
