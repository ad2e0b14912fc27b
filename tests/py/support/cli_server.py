"""A warm process that the tests' etl-craft commands are forked from (tests.py.support.cli.etl_craft).

A test suite runs etl-craft thousands of times, and a new interpreter spends most of each command importing
SQLAlchemy, psycopg, DuckDB and sqlglot. This server imports every command once, then forks one child per request:
the child changes to the request's directory, takes its environment, sends stdout and stderr to the request's
files and runs `python -m etlcraft` with its arguments (runpy, as the interpreter does), so each command still
runs in a process of its own with its own exit code.

Protocol, one JSON line each way on the socket it is given (fd in argv[1]): a request {"args", "cwd", "env",
"out", "err"} is answered {"pid": n} once forked, then {"returncode": n} once the child ended (negative: killed by
that signal, as subprocess reports it). The server ends when the socket closes.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import random
import runpy
import socket
import sys
import traceback


def _preload() -> None:
    from etlcraft.cli import COMMANDS

    for target in COMMANDS.values():
        importlib.import_module(target.partition(":")[0])
    for module in ("psycopg", "duckdb", "sqlglot", "etlcraft.handlers.sql", "etlcraft.supervisor.child"):
        importlib.import_module(module)


def _child(request: dict) -> None:  # type: ignore[type-arg]
    """In the fork: become `python -m etlcraft <args>` run in the request's directory; never return."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        random.seed()  # forks share the server's random state; a new interpreter would not
        sys.argv = ["etlcraft", *request["args"]]
        sys.path[0] = os.getcwd()  # as `python -m` puts the working directory first
        try:
            runpy.run_module("etlcraft", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # what the interpreter prints for an uncaught exception
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing more to write
                stream.flush()
        os._exit(code & 0xFF)


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    channel.set_inheritable(False)
    _preload()
    gc.freeze()
    reader, writer = channel.makefile("r"), channel.makefile("w")
    for line in reader:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            os.close(channel.fileno())  # the command and whatever it starts never hold the tests' channel
            _child(request)
        writer.write(json.dumps({"pid": pid}) + "\n")
        writer.flush()
        _, status = os.waitpid(pid, 0)
        returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        writer.write(json.dumps({"returncode": returncode}) + "\n")
        writer.flush()


if __name__ == "__main__":
    main()
