"""AUD_ACTIONS: one row per state-changing request, recorded once, in the transaction of the request."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from etlcraft.core.actor import current_actor
from etlcraft.engine.db import EngineDB

#: Argument names whose values are masked in AUD_ACTIONS.ARGUMENTS.
_SENSITIVE = re.compile(r"password|passwd|pwd|secret|token|api_key|private_key|access_key|credential", re.IGNORECASE)


def masked(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ("***" if _SENSITIVE.search(k) and v is not None else v) for k, v in arguments.items()}


def record_action(db: EngineDB, conn: sa.Connection, command: str, arguments: Mapping[str, Any]) -> None:
    """Record that the current actor requested `command` with `arguments` (values of sensitive names masked)."""
    actor = current_actor()
    conn.execute(
        sa.text(
            f"INSERT INTO {db.qualify('AUD_ACTIONS')}"
            " (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS)"
            f" VALUES ({db.now_sql}, {db.now_sql}, :actor, :kind, :host, :command, :arguments)"
        ),
        {
            "actor": actor.name,
            "kind": str(actor.kind),
            "host": socket.gethostname(),
            "command": command,
            "arguments": json.dumps(masked(arguments), sort_keys=True, default=str),
        },
    )
