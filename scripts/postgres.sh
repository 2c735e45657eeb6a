#!/usr/bin/env bash
# Makes sure a local PostgreSQL serves aics's tests, and prints its URL as
# the last line of stdout (everything else goes to stderr):
#
#   export DATABASE_URL=$(scripts/postgres.sh | tail -n 1)
#
# Idempotent, non-interactive (works in CI on a fresh Debian 12 as root):
# installs Debian's `postgresql` package when missing, starts the cluster
# when it is down, and creates the role and database when they are missing.
# The role has CREATEDB because #[sqlx::test] creates one database per test.
#
# Overrides: AICS_PG_USER, AICS_PG_PASSWORD, AICS_PG_DB (default aics),
# AICS_PG_PORT (default: the cluster's port, else 5432).
set -euo pipefail

user=${AICS_PG_USER:-aics}
password=${AICS_PG_PASSWORD:-aics}
db=${AICS_PG_DB:-aics}

log() { printf 'postgres.sh: %s\n' "$*" >&2; }

as_postgres() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        sudo -n -u postgres -- "$@"
    fi
}

if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
    log "installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$(id -u)" = 0 ]; then sudo_cmd=(); else sudo_cmd=(sudo -n); fi
    "${sudo_cmd[@]}" apt-get update -qq >&2
    "${sudo_cmd[@]}" apt-get install -y -qq postgresql >&2
fi

# The first cluster listed (Debian creates 15/main with the package).
read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1) || true
if [ -z "${version:-}" ]; then
    version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
    log "creating cluster $version/main"
    pg_createcluster "$version" main >&2
    read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1)
fi
port=${AICS_PG_PORT:-${port:-5432}}

if [ "$status" != "online" ]; then
    log "starting cluster $version/$cluster"
    pg_ctlcluster "$version" "$cluster" start >&2 || {
        # A stale pid file after an unclean stop is the usual cause.
        log "start failed; see /var/log/postgresql/postgresql-$version-$cluster.log"
        exit 1
    }
fi

for _ in $(seq 1 30); do
    if as_postgres psql -p "$port" -Atqc 'SELECT 1' >/dev/null 2>&1; then break; fi
    sleep 1
done
as_postgres psql -p "$port" -Atqc 'SELECT 1' >/dev/null

# Role and database, created only when missing; the password is (re)set so
# the printed URL always works.
as_postgres psql -p "$port" -v ON_ERROR_STOP=1 -q >&2 <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') THEN
        CREATE ROLE "$user" LOGIN CREATEDB PASSWORD '$password';
    ELSE
        ALTER ROLE "$user" LOGIN CREATEDB PASSWORD '$password';
    END IF;
END
\$\$;
SQL
if [ "$(as_postgres psql -p "$port" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
    log "creating database $db"
    as_postgres createdb -p "$port" -O "$user" "$db"
fi

url="postgres://$user:$password@127.0.0.1:$port/$db"
# Check the URL itself (TCP and password authentication), not just the socket.
PGPASSWORD=$password psql "$url" -Atqc 'SELECT 1' >/dev/null
echo "$url"
