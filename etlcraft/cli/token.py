"""etl-craft token create, list and revoke: the HTTP API's bearer tokens, each one call of etlcraft.services.tokens."""

from __future__ import annotations

from typing import Any

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit_document, format_option
from etlcraft.cli.remote import segment
from etlcraft.services import tokens
from etlcraft.services.tokens import Role
from etlcraft.services.values import as_time


@click.group("token")
def command() -> None:
    """The bearer tokens of the HTTP API (etl-craft server, etl-craft api). A token's name is the actor of every
    request made with it; its role says what it may do: viewer reads, operator also triggers, backfills, cancels,
    pauses, resumes, marks and reruns, admin also manages tokens."""


@command.command("create")
@click.option("--name", required=True, help="The token's name: the actor recorded for every request made with it.")
@click.option("--role", required=True, type=click.Choice([str(r) for r in Role], case_sensitive=False),
              help="What the token may do.")
@click.option("--expires", metavar="DURATION", help="Expire the token after this long: 90d, 12h or 30m "
              "(default: never).")
@format_option
@click.pass_obj
def create(ctx: CliContext, name: str, role: str, expires: str | None, output_format: str) -> None:
    """Create a token and print it, once: the Engine DB keeps only its SHA-256, so it cannot be shown again."""
    if ctx.remote:
        doc = ctx.remote.post("/tokens", {"name": name, "role": role.lower(), "expires": expires})
    else:
        doc = tokens.created_json(tokens.create(ctx.existing_engine_db(), ctx.actor(), name, role, expires))
    emit_document(output_format, doc, _created_text)


def _created_text(doc: dict[str, Any]) -> str:
    expires = as_time(doc["expires_at"])
    return (f"{doc['token']}\n(token {doc['name']}, role {doc['role']}"
            + (f", expires {expires:%Y-%m-%d %H:%M:%S} UTC" if expires else "")
            + "; it is shown only this once: keep it in a secret store)")


@command.command("list")
@format_option
@click.pass_obj
def list_tokens(ctx: CliContext, output_format: str) -> None:
    """List the tokens: name, role, who created them and when, expiry, revocation and last use (never the token)."""
    remote = ctx.remote
    doc = remote.get("/tokens") if remote else tokens.list_json(tokens.list_tokens(ctx.existing_engine_db()))
    emit_document(output_format, doc, _table)


@command.command("revoke")
@click.option("--name", required=True, help="The token to revoke.")
@format_option
@click.pass_obj
def revoke(ctx: CliContext, name: str, output_format: str) -> None:
    """Revoke a token: every request presenting it is refused from now on. Its row stays, as history."""
    if ctx.remote:
        doc = ctx.remote.post(f"/tokens/{segment(name)}/revoke", {})
    else:
        doc = tokens.revoked_json(tokens.revoke(ctx.existing_engine_db(), ctx.actor(), name))
    emit_document(output_format, doc, lambda d: f"token {d['name']} is revoked")


def _when(value: str | None) -> str:
    moment = as_time(value)
    return "" if moment is None else f"{moment:%Y-%m-%d %H:%M}"


def _table(doc: dict[str, Any]) -> str:
    """etl-craft/tokens/1 as a table."""
    found = doc["tokens"]
    if not found:
        return "no tokens; create one with etl-craft token create --name N --role viewer|operator|admin"
    header = ["NAME", "ROLE", "CREATED", "BY", "EXPIRES", "REVOKED", "LAST USED"]
    rows = [[t["name"], t["role"], _when(t["created_at"]), t["created_by"], _when(t["expires_at"]) or "never",
             _when(t["revoked_at"]), _when(t["last_used_at"])] for t in found]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
