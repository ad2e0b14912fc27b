"""etl-craft publish-docs: serve the catalog site built by generate-docs over HTTP."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from urllib.parse import urlsplit

import click

from etlcraft.cli.context import CliContext
from etlcraft.cli.generate_docs import DEFAULT_FOLDER
from etlcraft.core.errors import UsageError


@click.command("publish-docs")
@click.option("--dir", "folder", type=click.Path(file_okay=False, path_type=Path), envvar="ETL_CRAFT_DOCS_DIR",
              help=f"The site's folder (default: {DEFAULT_FOLDER}/ in the project folder).")
@click.option("--host", default="127.0.0.1", show_default=True, envvar="ETL_CRAFT_DOCS_HOST",
              help="Address to listen on: loopback unless a proxy on another host must reach it.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              envvar="ETL_CRAFT_DOCS_PORT", help="Port to listen on (0: any free port, printed).")
@click.option("--base-url", envvar="ETL_CRAFT_DOCS_BASE_URL",
              help="The URL visitors use, when a reverse proxy serves the site (for example "
                   "https://docs.example.org/etl-craft/); its path is the prefix the site is served under.")
@click.option("--trusted-proxy", "trusted", multiple=True,
              help="Address or CIDR block of a proxy whose X-Forwarded-For is believed; repeatable. Others' is "
                   "ignored.")
@click.option("--allow", "allow", multiple=True,
              help="Address or CIDR block of visitors who may read the catalog; repeatable (default: anyone who "
                   "reaches the port).")
@click.option("--accept-url-change", is_flag=True, help="Publish at a --base-url other than the one recorded.")
@click.option("--quiet", is_flag=True, help="Do not log requests.")
@click.pass_obj
def command(ctx: CliContext, folder: Path | None, host: str, port: int, base_url: str | None,
            trusted: tuple[str, ...], allow: tuple[str, ...], accept_url_change: bool, quiet: bool) -> None:
    """Serve the catalog on HOST:PORT until interrupted (Ctrl-C or SIGTERM). Every request path is decoded and
    checked once: hidden files, dot segments and paths outside the folder answer 404. Rebuild the site with
    generate-docs while it is served: pages are replaced whole."""
    from etlcraft.catalog_site.publication import public_url, record_url
    from etlcraft.catalog_site.serve import ServeOptions, make_server, networks, normal_prefix

    site = (folder if folder is not None else ctx.project_dir / DEFAULT_FOLDER).absolute()
    if not (site / "index.html").is_file():
        raise UsageError(f"{site} holds no catalog (no index.html); run etl-craft generate-docs first, or give "
                         "--dir")
    try:
        options = ServeOptions(site, host, port, normal_prefix(urlsplit(base_url or "").path),
                               networks(trusted, "--trusted-proxy"), networks(allow, "--allow"), quiet)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    server = make_server(options)
    url = public_url(base_url, host, server.server_address[1])
    moved_from = record_url(site, url, accept_url_change)
    if moved_from:
        click.echo(f"the catalog moved from {moved_from}", err=True)
    click.echo(f"serving {site} on http://{host}:{server.server_address[1]}{options.prefix} ; published at {url}")
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
