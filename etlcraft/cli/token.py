"""etl-craft token create, list and revoke: the HTTP API's bearer tokens, each one call of etlcraft.services.tokens."""

from __future__ import annotations

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.output import emit, format_option
from etlcraft.services import tokens
from etlcraft.services.tokens import Role, TokenView


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
    created = tokens.create(ctx.existing_engine_db(), ctx.actor(), name, role, expires)
    emit(output_format, tokens.created_json(created),
         lambda: f"{created.token}\n(token {name}, role {created.view.role}"
                 + (f", expires {created.view.expires_at:%Y-%m-%d %H:%M:%S} UTC" if created.view.expires_at else "")
                 + "; it is shown only this once: keep it in a secret store)")


@command.command("list")
@format_option
@click.pass_obj
def list_tokens(ctx: CliContext, output_format: str) -> None:
    """List the tokens: name, role, who created them and when, expiry, revocation and last use (never the token)."""
    found = tokens.list_tokens(ctx.existing_engine_db())
    emit(output_format, tokens.list_json(found), lambda: _table(found))


@command.command("revoke")
@click.option("--name", required=True, help="The token to revoke.")
@format_option
@click.pass_obj
def revoke(ctx: CliContext, name: str, output_format: str) -> None:
    """Revoke a token: every request presenting it is refused from now on. Its row stays, as history."""
    view = tokens.revoke(ctx.existing_engine_db(), ctx.actor(), name)
    emit(output_format, tokens.revoked_json(view), lambda: f"token {name} is revoked")


def _when(value: object) -> str:
    return "" if value is None else f"{value:%Y-%m-%d %H:%M}"


def _table(found: tuple[TokenView, ...]) -> str:
    if not found:
        return "no tokens; create one with etl-craft token create --name N --role viewer|operator|admin"
    header = ["NAME", "ROLE", "CREATED", "BY", "EXPIRES", "REVOKED", "LAST USED"]
    rows = [[t.name, t.role, _when(t.created_at), t.created_by, _when(t.expires_at) or "never",
             _when(t.revoked_at), _when(t.last_used_at)] for t in found]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
