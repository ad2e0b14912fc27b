"""etl-craft-airflow: Airflow DAGs built from the YAML files of `etl-craft generate-yml`."""

from etl_craft_airflow.factory import (
    SUPPORTED_VERSIONS,
    PipelineYamlError,
    attempts_budget,
    build_dag,
    build_dags,
    load_pipeline_yaml,
)

__version__ = "0.1.0"
__all__ = ["SUPPORTED_VERSIONS", "PipelineYamlError", "attempts_budget", "build_dag", "build_dags",
           "load_pipeline_yaml"]
