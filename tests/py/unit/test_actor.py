"""Who is acting: ETL_CRAFT_ACTOR or user@host for humans, SYSTEM by default, scoped with acting_as."""

from __future__ import annotations

import getpass
import re
import socket
import threading

import pytest

from etlcraft.core.actor import SYSTEM, Actor, acting_as, current_actor, resolve_actor
from etlcraft.core.enums import ActorKind
from etlcraft.core.errors import ConfigurationError

EMPTY = "the variable ETL_CRAFT_ACTOR is empty; set it to a name such as alice@laptop or github:alice"


@pytest.fixture
def fixed_user_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "alice")
    monkeypatch.setattr(socket, "gethostname", lambda: "laptop.example")


# ---------------------------------------------------------------------------------------- resolve_actor


@pytest.mark.parametrize("name", ["alice@laptop", "github:alice", "José Müller", "a" * 128, "ci/build-42 #7"])
def test_etl_craft_actor_names_the_human(name: str) -> None:
    assert resolve_actor({"ETL_CRAFT_ACTOR": name}) == Actor(name, ActorKind.HUMAN)


def test_without_etl_craft_actor_the_human_is_user_at_host(fixed_user_and_host: None) -> None:
    assert resolve_actor({"USER": "mallory", "ETL_CRAFT_ACTOR_X": "x"}) == Actor(
        "alice@laptop.example", ActorKind.HUMAN
    )


def test_etl_craft_actor_wins_over_user_at_host(fixed_user_and_host: None) -> None:
    assert resolve_actor({"ETL_CRAFT_ACTOR": "bob@ci"}).name == "bob@ci"


def test_the_process_environment_is_read_when_no_mapping_is_given(
    monkeypatch: pytest.MonkeyPatch, fixed_user_and_host: None
) -> None:
    monkeypatch.setenv("ETL_CRAFT_ACTOR", "carol@desk")
    assert resolve_actor() == Actor("carol@desk", ActorKind.HUMAN)
    monkeypatch.delenv("ETL_CRAFT_ACTOR")
    assert resolve_actor() == Actor("alice@laptop.example", ActorKind.HUMAN)


def test_an_empty_given_mapping_is_not_replaced_by_the_process_environment(
    monkeypatch: pytest.MonkeyPatch, fixed_user_and_host: None
) -> None:
    monkeypatch.setenv("ETL_CRAFT_ACTOR", "from-process@env")
    assert resolve_actor({}).name == "alice@laptop.example"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("", EMPTY, id="empty"),
        pytest.param("   ", EMPTY, id="spaces"),
        pytest.param(" \t\n ", EMPTY, id="whitespace-only"),
        pytest.param(
            "a" * 129,
            "the variable ETL_CRAFT_ACTOR is 129 characters long; at most 128 are allowed: shorten it",
            id="129-characters",
        ),
        pytest.param(
            "é" * 300,
            "the variable ETL_CRAFT_ACTOR is 300 characters long; at most 128 are allowed: shorten it",
            id="300-characters",
        ),
        pytest.param(
            "alice\nbob",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\n'; use printable characters only",
            id="newline",
        ),
        pytest.param(
            "alice@laptop\n",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\n'; use printable characters only",
            id="trailing-newline",
        ),
        pytest.param(
            "alice\x00",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\x00'; use printable characters only",
            id="nul",
        ),
        pytest.param(
            "alice\tbob",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\t'; use printable characters only",
            id="tab",
        ),
        pytest.param(
            "alice\rbob",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\r'; use printable characters only",
            id="carriage-return",
        ),
        pytest.param(
            "\x1b[31malice",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\x1b'; use printable characters only",
            id="terminal-escape",
        ),
        pytest.param(
            "alice\x7f",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\x7f'; use printable characters only",
            id="delete",
        ),
        pytest.param(
            "alice\u202ebob",
            "the variable ETL_CRAFT_ACTOR holds the control character '\\u202e'; "
            "use printable characters only",
            id="right-to-left-override",
        ),
    ],
)
def test_an_invalid_etl_craft_actor_is_refused_naming_the_variable(value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(message) + r"\Z") as info:
        resolve_actor({"ETL_CRAFT_ACTOR": value})
    assert "ETL_CRAFT_ACTOR" in str(info.value)
    assert info.value.exit_code == 3


def test_an_invalid_etl_craft_actor_is_refused_even_when_user_at_host_would_work(
    fixed_user_and_host: None,
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(EMPTY)):
        resolve_actor({"ETL_CRAFT_ACTOR": ""})


def test_an_invalid_etl_craft_actor_in_the_process_environment_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ETL_CRAFT_ACTOR", "x" * 200)
    with pytest.raises(
        ConfigurationError, match=re.escape("the variable ETL_CRAFT_ACTOR is 200 characters long")
    ):
        resolve_actor()


# ----------------------------------------------------------------------------------------------- Actor


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "the actor name is empty; set it to a name such as alice@laptop or github:alice"),
        ("b" * 129, "the actor name is 129 characters long; at most 128 are allowed: shorten it"),
        ("bob\x00", "the actor name holds the control character '\\x00'; use printable characters only"),
    ],
    ids=["empty", "too-long", "nul"],
)
def test_an_actor_with_an_invalid_name_cannot_be_made(name: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Actor(name, ActorKind.HUMAN)
    assert str(info.value) == message


# ------------------------------------------------------------------------------ current_actor, acting_as


def test_the_default_actor_is_system() -> None:
    seen: list[Actor] = []
    thread = threading.Thread(target=lambda: seen.append(current_actor()))
    thread.start()
    thread.join()
    assert seen == [SYSTEM]
    assert current_actor() == SYSTEM
    assert SYSTEM.kind == ActorKind.SYSTEM
    assert SYSTEM.name == "etl-craft"


def test_acting_as_scopes_the_current_actor() -> None:
    alice = Actor("alice@laptop", ActorKind.HUMAN)
    with acting_as(alice) as actor:
        assert actor is alice
        assert current_actor() is alice
    assert current_actor() == SYSTEM


def test_acting_as_nests_and_restores_each_level() -> None:
    alice = Actor("alice@laptop", ActorKind.HUMAN)
    bob = Actor("bob@laptop", ActorKind.HUMAN)
    with acting_as(alice):
        with acting_as(bob):
            assert current_actor() is bob
        assert current_actor() is alice
        with acting_as(SYSTEM):
            assert current_actor().kind == ActorKind.SYSTEM
        assert current_actor() is alice
    assert current_actor() == SYSTEM


def test_acting_as_restores_the_actor_when_the_block_raises() -> None:
    alice = Actor("alice@laptop", ActorKind.HUMAN)
    with pytest.raises(RuntimeError, match="boom"), acting_as(alice):
        raise RuntimeError("boom")
    assert current_actor() == SYSTEM


def test_acting_as_in_one_thread_does_not_leak_into_another() -> None:
    alice = Actor("alice@laptop", ActorKind.HUMAN)
    seen: list[Actor] = []
    with acting_as(alice):
        thread = threading.Thread(target=lambda: seen.append(current_actor()))
        thread.start()
        thread.join()
        assert current_actor() is alice
    assert seen == [SYSTEM]
