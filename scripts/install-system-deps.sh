#!/usr/bin/env bash
# Installs the Debian packages etl-craft's development needs, when they are missing:
#   venv   python3-venv, for `python3 -m venv` (the Makefile makes its own .venv from the system python3)
#   pgtap  the pgtap extension for the running PostgreSQL server and pg_prove, for the pgTAP suites
#   bench  wrk, the HTTP load generator bench/api.py drives
#   browser  chromium, the headless browser the catalog's screenshot test drives (tests/py/catalog)
# With no argument, all four. Needs root (CI runs as root); prints what to do otherwise.
set -euo pipefail

python=${SYSTEM_PYTHON:-python3}
pg_url=${ETL_CRAFT_TEST_PG_URL:-postgresql://root@127.0.0.1:5432/test}
packages=""

wants=("$@")
asked() { [ ${#wants[@]} -eq 0 ] || printf '%s\n' "${wants[@]}" | grep -qx "$1"; }

for what in "${wants[@]}"; do
  case $what in venv | pgtap | bench | browser) ;; *) echo "usage: $0 [venv] [pgtap] [bench] [browser]" >&2; exit 2 ;; esac
done

if asked venv; then
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "$python is missing: install Python 3.11 or newer (on Debian: sudo apt-get install -y python3)" >&2
    exit 1
  fi
  # Debian's python3 lacks ensurepip, without which `python3 -m venv` fails, until python3-venv is installed.
  if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    packages="$packages python3-venv python${version}-venv"
  fi
fi

if asked pgtap; then
  major=$(psql "$pg_url" -Atc "SELECT current_setting('server_version_num')::int / 10000" 2>/dev/null || echo 15)
  have_pgtap=$(psql "$pg_url" -Atc "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'" \
    2>/dev/null || echo 0)
  if ! command -v pg_prove >/dev/null 2>&1 || [ "$have_pgtap" != "1" ]; then
    packages="$packages postgresql-${major}-pgtap libtap-parser-sourcehandler-pgtap-perl"
  fi
fi

if asked bench && ! command -v wrk >/dev/null 2>&1; then
  packages="$packages wrk"
fi

if asked browser && ! command -v chromium >/dev/null 2>&1; then
  packages="$packages chromium"
fi

packages=${packages# }
if [ -z "$packages" ]; then
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "missing Debian packages: run  sudo apt-get install -y $packages" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086 # one word per package
apt-get install -y -q $packages >/dev/null || { apt-get update -q >/dev/null && apt-get install -y -q $packages >/dev/null; }
