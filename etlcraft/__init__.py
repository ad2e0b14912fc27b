"""etl-craft: a metadata-driven ETL orchestrator whose state machine lives in the Engine DB."""

__version__ = "0.1.0.dev0"
