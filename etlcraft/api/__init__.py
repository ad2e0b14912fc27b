"""The HTTP API v1 (FastAPI, served by uvicorn): `etl-craft api`, and `etl-craft server` beside its schedules.

Every endpoint authenticates its bearer token (etlcraft.services.tokens), checks the token's role, and calls the
service function the matching CLI command calls, as the token's name (the actor), returning the JSON document the
command prints with --format json. Errors are one document, etl-craft/error/1 (etlcraft.api.errors).
"""
