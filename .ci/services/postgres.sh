# Starts a throwaway PostgreSQL cluster for the checkpointer tests and exports its URL as
# AGENTGRAPH_POSTGRES_URL. Sourced by .ci/run (and usable by hand: `source .ci/services/postgres.sh`).
# Debian's PostgreSQL packages keep initdb/pg_ctl off PATH; the stock cluster stays down.

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$pg_bin" ]; then
    echo "installing postgresql"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
fi
pg_user=postgres
id "$pg_user" >/dev/null 2>&1 || useradd --system --no-create-home "$pg_user"
pg_data=$(mktemp -d /tmp/agentgraph-pg.XXXXXX)
chown "$pg_user" "$pg_data"
pg_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
run_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u "$pg_user" -- "$@"; else "$@"; fi; }
run_as_pg "$pg_bin/initdb" -D "$pg_data/data" -A trust -U postgres >/dev/null
run_as_pg "$pg_bin/pg_ctl" -D "$pg_data/data" -l "$pg_data/log" -w \
    -o "-p $pg_port -k $pg_data -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
export AGENTGRAPH_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
echo "postgres: $AGENTGRAPH_POSTGRES_URL ($($pg_bin/postgres --version))"
agentgraph_stop_postgres() { run_as_pg "$pg_bin/pg_ctl" -D "$pg_data/data" -m fast stop >/dev/null 2>&1 || true; }
# Chain onto any EXIT trap another service script set.
agentgraph_previous_trap="$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")"
# shellcheck disable=SC2064
trap "${agentgraph_previous_trap:+$agentgraph_previous_trap; }agentgraph_stop_postgres" EXIT
