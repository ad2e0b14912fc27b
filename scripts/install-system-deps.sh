#!/usr/bin/env bash
# Installs what the pgTAP suites need when it is missing: the pgtap extension for the running PostgreSQL
# server and pg_prove. Needs root (CI runs as root); prints what to do otherwise.
set -euo pipefail

major=$(psql "${ETL_CRAFT_TEST_PG_URL:-postgresql://root@127.0.0.1:5432/test}" -Atc \
  "SELECT current_setting('server_version_num')::int / 10000" 2>/dev/null || echo 15)
have_pgtap=$(psql "${ETL_CRAFT_TEST_PG_URL:-postgresql://root@127.0.0.1:5432/test}" -Atc \
  "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'" 2>/dev/null || echo 0)

if command -v pg_prove >/dev/null 2>&1 && [ "$have_pgtap" = "1" ]; then
  exit 0
fi
packages="postgresql-${major}-pgtap libtap-parser-sourcehandler-pgtap-perl"
if [ "$(id -u)" != "0" ]; then
  echo "pgTAP or pg_prove is missing: run  sudo apt-get install -y $packages" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q $packages >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $packages >/dev/null; }
