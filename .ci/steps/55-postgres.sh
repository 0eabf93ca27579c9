#!/usr/bin/env bash
# The results store on a real PostgreSQL: Debian's postgresql (installed when missing), a cluster of
# its own in a temporary directory, listening on 127.0.0.1 only at a free port, stopped and removed at
# the end whatever happens. Runs the store tests that also run on SQLite in the default tier
# (tests/results/test_store.py, tests/report/test_history.py), now parametrized on PostgreSQL too
# (tests/store_specs.py reads PYTPS_TEST_POSTGRES_URL). A few minutes.
set -euo pipefail
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [[ -z "$bindir" ]]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql
    bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
fi
python -c 'import psycopg' 2>/dev/null || pip install -q "psycopg[binary]>=3.1"

work=$(mktemp -d)
chmod 755 "$work"
port=$(python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# PostgreSQL refuses to run as root: the cluster belongs to an unprivileged user when CI is root.
run_pg=()
if [[ $(id -u) -eq 0 ]]; then
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$work"
    run_pg=(runuser -u postgres --)
fi
stop() {
    "${run_pg[@]}" "$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stop EXIT
"${run_pg[@]}" "$bindir/initdb" -D "$work/data" -U pytps --auth=trust -E UTF8 >/dev/null
"${run_pg[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$work -c fsync=off" start >/dev/null
export PYTPS_TEST_POSTGRES_URL="postgresql://pytps@127.0.0.1:$port/postgres"
pytest -q tests/store tests/report/test_history.py -k "postgresql"
