"""AUD_TARGET_HASH_VERSION: which HASH_KEY formula each warehouse target's rows were written with.

etl-craft records version 2 after the warehouse commit of an attempt that created the target, or merged into a
target whose rows had no hash yet, and after `etl-craft rehash`. A failed record is harmless: the next merge
refuses and names `etl-craft rehash`, which records it again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from etlcraft.core.actor import current_actor
from etlcraft.engine.actions import record_action
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call_in

TABLE = "AUD_TARGET_HASH_VERSION"


def recorded_version(db: EngineDB, target_key: str) -> int | None:
    """The hash version recorded for the target (its lower-case qualified name), None when there is none."""
    with db.read() as conn:
        found = conn.execute(sa.text(f"SELECT HASH_VERSION FROM {db.qualify(TABLE)} WHERE TARGET_OBJECT = :target"),
                             {"target": target_key}).scalar()
    return None if found is None else int(found)


def record_version(db: EngineDB, target_key: str, version: int, *, command: str | None = None,
                   arguments: Mapping[str, Any] | None = None) -> None:
    """Record that every row of the target now carries `version` hashes, with the acting actor and the time
    (record_hash_version); with `command`, also the request in AUD_ACTIONS, in the same transaction."""
    with db.write(current_actor()) as conn:
        call_in(db, conn, "record_hash_version", target_object=target_key, hash_version=version)
        if command is not None:
            record_action(db, conn, command, arguments or {})
