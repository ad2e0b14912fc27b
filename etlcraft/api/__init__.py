"""The HTTP API of etl-craft server."""
