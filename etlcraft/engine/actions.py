"""AUD_ACTIONS: one row per state-changing request, recorded once, in the transaction of the request."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in

#: Argument names whose values are masked in AUD_ACTIONS.ARGUMENTS.
_SENSITIVE = re.compile(r"password|passwd|pwd|secret|token|api_key|private_key|access_key|credential", re.IGNORECASE)


def masked(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ("***" if _SENSITIVE.search(k) and v is not None else v) for k, v in arguments.items()}


def record_action(db: EngineDB, conn: sa.Connection, command: str, arguments: Mapping[str, Any]) -> None:
    """Record that the current actor requested `command` with `arguments` (values of sensitive names masked), through
    the write API's record_action: the Engine DB stamps the row with the actor the transaction is marked with."""
    call_in(db, conn, "record_action", command=command,
            arguments=json.dumps(masked(arguments), sort_keys=True, default=str), host=socket.gethostname())
