"""Lease functions (sql/functions/030_leases.sql.j2) with a pinned clock, the same on SQLite and PostgreSQL:
renewing run and attempt leases, and reconciling what nobody renews any more."""

from __future__ import annotations

import pytest

from etlcraft.core.errors import NotFoundError, RefusedByPolicyError, StaleTransitionError
from etlcraft.engine.db import EngineDB
from etlcraft.engine.functions import call
from tests.py.support.attempts import OTHER, OWNER, T0, Attempts, as_utc, later


@pytest.fixture
def att(engine_db: EngineDB) -> Attempts:
    engine_db.clock.pin(T0)
    return Attempts(engine_db)


def lost_message(attempt_id: int, owner: str, lease: str) -> str:
    return f"attempt {attempt_id} was lost: owner {owner} stopped renewing its lease at {lease} UTC"


# -- renew_lease -----------------------------------------------------------------------------------------------


def test_renew_lease__a_run__extends_its_owners_lease(att: Attempts) -> None:
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER)
    att.db.clock.pin(later(30))
    rows = call(att.db, "renew_lease", owner_id=OWNER, run_id=run, lease_seconds=45)
    assert [tuple(r) for r in rows] == [("run", run, later(75))]
    stored = att.run_row(run)
    assert (stored["OWNER_ID"], as_utc(stored["LEASE_EXPIRES_AT"]), as_utc(stored["HEARTBEAT_AT"])) == (
        OWNER, later(75), later(30))


def test_renew_lease__a_run__refused_to_another_owner_or_after_it_ended(att: Attempts) -> None:
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER)
    before = att.snapshot()
    with pytest.raises(StaleTransitionError, match=(
            f"^run {run} is IN-PROGRESS owned by {OWNER} \\(lease until 2026-03-01 12:01:00 UTC\\), expected"
            f" IN-PROGRESS owned by {OTHER}; stop supervising it")):
        call(att.db, "renew_lease", owner_id=OTHER, run_id=run)
    assert att.snapshot() == before
    call(att.db, "mark_run", run_id=run, status="FAILED", reason="by hand")
    with pytest.raises(StaleTransitionError, match=f"^run {run} is FAILED \\(unowned\\), expected IN-PROGRESS"):
        call(att.db, "renew_lease", owner_id=OWNER, run_id=run)
    with pytest.raises(NotFoundError, match="^run 999 does not exist"):
        call(att.db, "renew_lease", owner_id=OWNER, run_id=999)


def test_renew_lease__an_attempt__extends_its_owners_lease_and_refuses_others(att: Attempts) -> None:
    a = att.running()
    att.db.clock.pin(later(50))
    rows = call(att.db, "renew_lease", owner_id=OWNER, attempt_id=a.attempt_id)
    assert [tuple(r) for r in rows] == [("attempt", a.attempt_id, later(110))]
    assert as_utc(att.attempt(a.attempt_id)["HEARTBEAT_AT"]) == later(50)
    before = att.snapshot()
    with pytest.raises(StaleTransitionError, match=(
            f"^attempt {a.attempt_id} is RUNNING owned by {OWNER} \\(lease until 2026-03-01 12:01:50 UTC\\),"
            f" expected CLAIMED or RUNNING owned by {OTHER}; stop working on it")):
        call(att.db, "renew_lease", owner_id=OTHER, attempt_id=a.attempt_id)
    assert att.snapshot() == before
    call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="SUCCESS")
    with pytest.raises(StaleTransitionError, match=f"^attempt {a.attempt_id} is SUCCESS owned by {OWNER} \\(ended "):
        call(att.db, "renew_lease", owner_id=OWNER, attempt_id=a.attempt_id)
    with pytest.raises(NotFoundError, match="^attempt 999 does not exist"):
        call(att.db, "renew_lease", owner_id=OWNER, attempt_id=999)


def test_renew_lease__neither_run_nor_attempt__renews_every_live_attempt_of_the_owner(att: Attempts) -> None:
    mine_claimed = att.claimed(key="manual:1")
    mine_running = att.running(key="manual:2")
    mine_ended = att.running(key="manual:3")
    call(att.db, "finish_attempt", attempt_id=mine_ended.attempt_id, owner_id=OWNER, status="FAILED")
    theirs = att.running(key="manual:4", owner=OTHER)
    queued = att.queue(key="manual:5")
    att.db.clock.pin(later(40))
    rows = call(att.db, "renew_lease", owner_id=OWNER, lease_seconds=30)
    assert [tuple(r) for r in rows] == [("attempt", mine_claimed.attempt_id, later(70)),
                                        ("attempt", mine_running.attempt_id, later(70))]
    assert as_utc(att.attempt(theirs.attempt_id)["LEASE_EXPIRES_AT"]) == later(60)
    assert att.attempt(queued.attempt_id)["LEASE_EXPIRES_AT"] is None
    assert call(att.db, "renew_lease", owner_id="nobody@nowhere") == []


def test_renew_lease__run_and_attempt__renews_both(att: Attempts) -> None:
    a = att.running()
    call(att.db, "start_run", run_id=a.run_id, owner_id=OWNER)
    att.db.clock.pin(later(20))
    rows = call(att.db, "renew_lease", owner_id=OWNER, run_id=a.run_id, attempt_id=a.attempt_id)
    assert [tuple(r) for r in rows] == [("run", a.run_id, later(80)), ("attempt", a.attempt_id, later(80))]


def test_renew_lease__an_expired_lease_not_yet_reconciled__is_still_the_owners(att: Attempts) -> None:
    a = att.running()
    att.db.clock.pin(later(600))
    rows = call(att.db, "renew_lease", owner_id=OWNER, attempt_id=a.attempt_id)
    assert [tuple(r) for r in rows] == [("attempt", a.attempt_id, later(660))]
    assert call(att.db, "reconcile_expired") == []


def test_renew_lease__lease_seconds_below_one__is_refused_by_policy(att: Attempts) -> None:
    a = att.running()
    with pytest.raises(RefusedByPolicyError, match="lease_seconds must be a whole number of seconds of at least 1"):
        call(att.db, "renew_lease", owner_id=OWNER, attempt_id=a.attempt_id, lease_seconds=0)


# -- reconcile_expired -----------------------------------------------------------------------------------------


def test_renew_before_expiry_keeps_the_attempt_and_reconcile_after_expiry_marks_it_lost(att: Attempts) -> None:
    a = att.running()  # lease until T0 + 60 s
    att.db.clock.pin(later(50))
    call(att.db, "renew_lease", owner_id=OWNER)  # now until T0 + 110 s
    att.db.clock.pin(later(100))
    assert call(att.db, "reconcile_expired") == []
    att.db.clock.pin(later(110))
    assert call(att.db, "reconcile_expired") == [], "a lease expires after its expiry time, not at it"
    assert att.attempt(a.attempt_id)["STATUS"] == "RUNNING"
    att.db.clock.pin(later(111))
    rows = call(att.db, "reconcile_expired")
    assert [tuple(r) for r in rows] == [(a.attempt_id, OWNER, "FAILED")]
    attempt, summary = att.attempt(a.attempt_id), att.task_run(a.task_run_id)
    message = lost_message(a.attempt_id, OWNER, "2026-03-01 12:01:50")
    assert (attempt["STATUS"], attempt["ERROR_MESSAGE"], attempt["LEASE_EXPIRES_AT"]) == ("LOST", message, None)
    assert (summary["STATUS"], summary["ERROR_MESSAGE"]) == ("FAILED", message)
    assert as_utc(attempt["ENDED_AT"]) == as_utc(summary["END_DATE"]) == later(111)
    assert call(att.db, "reconcile_expired") == []


def test_reconcile_expired__releases_an_expired_run_once_no_attempt_of_it_is_live(att: Attempts) -> None:
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER, lease_seconds=30)  # until T0 + 30 s
    a = att.running()  # attempt lease until T0 + 60 s
    att.db.clock.pin(later(45))
    assert call(att.db, "reconcile_expired") == []
    assert att.run_row(run)["OWNER_ID"] == OWNER, "a run with a live attempt keeps its owner"
    att.db.clock.pin(later(61))
    rows = call(att.db, "reconcile_expired")
    assert [(r.attempt_id, r.owner_id) for r in rows] == [(a.attempt_id, OWNER)]
    released = att.run_row(run)
    assert (released["STATUS"], released["OWNER_ID"], released["LEASE_EXPIRES_AT"]) == ("IN-PROGRESS", None, None)
    owned = call(att.db, "start_run", run_id=run, owner_id=OTHER)[0]
    assert (owned.status, owned.owner_id) == ("IN-PROGRESS", OTHER), "the run can be resumed by another process"


def test_release_run__its_owner_gives_the_run_up_once_its_attempts_ended__others_release_nothing(
        att: Attempts) -> None:
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER)
    a = att.running()
    with pytest.raises(RefusedByPolicyError, match=f"its attempt {a.attempt_id} is still RUNNING"):
        call(att.db, "release_run", run_id=run, owner_id=OWNER)
    assert [tuple(r) for r in call(att.db, "release_run", run_id=run, owner_id=OTHER)] == [
        (run, "IN-PROGRESS", False)]
    call(att.db, "finish_attempt", attempt_id=a.attempt_id, owner_id=OWNER, status="SUCCESS", exit_code=0)
    assert [tuple(r) for r in call(att.db, "release_run", run_id=run, owner_id=OWNER)] == [(run, "IN-PROGRESS", True)]
    released = att.run_row(run)
    assert (released["STATUS"], released["OWNER_ID"], released["LEASE_EXPIRES_AT"]) == ("IN-PROGRESS", None, None)
    assert call(att.db, "start_run", run_id=run, owner_id=OTHER)[0].owner_id == OTHER, "resumable at once"


def test_reconcile_expired__a_live_run_lease_is_kept(att: Attempts) -> None:
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER, lease_seconds=300)
    att.db.clock.pin(later(200))
    before = att.snapshot()
    assert call(att.db, "reconcile_expired") == []
    assert att.snapshot() == before


def test_reconcile_expired__grace_seconds__waits_longer(att: Attempts) -> None:
    a = att.running()
    run = att.run()
    call(att.db, "start_run", run_id=run, owner_id=OWNER)
    att.db.clock.pin(later(180))
    assert call(att.db, "reconcile_expired", grace_seconds=120) == []
    assert att.run_row(run)["OWNER_ID"] == OWNER
    att.db.clock.pin(later(181))
    assert [r.attempt_id for r in call(att.db, "reconcile_expired", grace_seconds=120)] == [a.attempt_id]
    assert att.run_row(run)["OWNER_ID"] is None
    with pytest.raises(RefusedByPolicyError, match="grace_seconds must be 0 or more, not -1"):
        call(att.db, "reconcile_expired", grace_seconds=-1)


def test_reconcile_expired__host__judges_only_that_hosts_and_unknown_hosts_attempts(att: Attempts) -> None:
    here = att.running(key="manual:1")  # started on host-a
    there = att.claimed(key="manual:2", owner=OTHER)
    call(att.db, "start_attempt", attempt_id=there.attempt_id, owner_id=OTHER, host="host-b", pid=7,
         process_start="1")
    never_started = att.claimed(key="manual:3")  # HOST unknown
    att.db.clock.pin(later(61))
    rows = call(att.db, "reconcile_expired", host="host-a")
    assert [r.attempt_id for r in rows] == [here.attempt_id, never_started.attempt_id]
    assert att.attempt(there.attempt_id)["STATUS"] == "RUNNING"
    assert [tuple(r) for r in call(att.db, "reconcile_expired")] == [(there.attempt_id, OTHER, "FAILED")]


def test_reconcile_expired__many_attempts__each_task_run_gets_its_own_message(att: Attempts) -> None:
    first = att.running(key="manual:1")
    second = att.claimed(key="manual:2", owner=OTHER)
    att.db.clock.pin(later(90))
    rows = call(att.db, "reconcile_expired")
    assert [tuple(r) for r in rows] == [(first.attempt_id, OWNER, "FAILED"), (second.attempt_id, OTHER, "FAILED")]
    assert att.task_run(first.task_run_id)["ERROR_MESSAGE"] == lost_message(first.attempt_id, OWNER,
                                                                              "2026-03-01 12:01:00")
    assert att.task_run(second.task_run_id)["ERROR_MESSAGE"] == lost_message(second.attempt_id, OTHER,
                                                                               "2026-03-01 12:01:00")


def test_a_reclaimed_attempt_is_not_lost_by_a_stale_lose_attempt(att: Attempts) -> None:
    first = att.running()
    att.db.clock.pin(later(61))
    assert [r.attempt_id for r in call(att.db, "reconcile_expired")] == [first.attempt_id]
    retry = att.running(owner=OTHER)  # the retry of the same task run, claimed by another process
    assert retry.task_run_id == first.task_run_id
    before = att.snapshot()
    # a reconciler that saw the task run's attempt owned by OWNER acts late, on either attempt
    with pytest.raises(StaleTransitionError, match=f"^attempt {first.attempt_id} is LOST"):
        call(att.db, "lose_attempt", attempt_id=first.attempt_id, owner_id=OWNER)
    with pytest.raises(StaleTransitionError, match=(
            f"^attempt {retry.attempt_id} is RUNNING owned by {OTHER} .*, expected CLAIMED or RUNNING owned by"
            f" {OWNER}; nothing was changed")):
        call(att.db, "lose_attempt", attempt_id=retry.attempt_id, owner_id=OWNER)
    assert att.snapshot() == before
    assert call(att.db, "reconcile_expired") == [], "the retry's lease is live"
