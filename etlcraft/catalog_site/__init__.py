"""The catalog site: static HTML pages of pipelines, tasks, tables with column lineage, and run history, built by
`etl-craft generate-docs` from the Engine DB in a fixed number of statements, and served by `etl-craft publish-docs`.

Not to be confused with etlcraft.engine.catalog (the Engine DB's own tables) or etlcraft.warehouse.catalog (the
warehouse's tables as sqlglot sees them), both of which this package reads.
"""
