"""Warm the fork server for task processes on a PostgreSQL Engine DB (see etlcraft.supervisor.warm)."""

from etlcraft.supervisor.warm import warm

warm("postgresql")
