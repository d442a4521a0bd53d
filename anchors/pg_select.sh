#!/usr/bin/env bash
# Anchor for sql/thread_select_by_id on PostgreSQL: pgbench, one client, the statements the
# harness sends (BEGIN; SELECT COUNT(*) FROM (SELECT 1 … WHERE id = $1 LIMIT 1) t; COMMIT), with
# -M prepared so the select is a prepared statement as in the harness: three round trips per
# transaction. Prints transactions per second.
# Usage: pg_select.sh [URL] [ROWS] [SECONDS]
set -euo pipefail
url=${1:-${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}} rows=${2:-1000} secs=${3:-5}
command -v pgbench >/dev/null || { echo "pg_select.sh: pgbench is not installed (apt-get install postgresql-contrib or postgresql)" >&2; exit 2; }
table=anchor_users_$$
script=$(mktemp)
trap 'psql -q "$url" -c "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true; rm -f "$script"' EXIT
psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null <<SQL
CREATE TABLE $table (id BIGSERIAL PRIMARY KEY, username VARCHAR(128), email VARCHAR(192), age INT);
INSERT INTO $table (username, email, age)
  SELECT 'user-' || g, 'user-' || g || '@example.test', 20 + g % 50 FROM generate_series(1, $rows) g;
ANALYZE $table;
SQL
cat >"$script" <<SQL
\set id random(1, $rows)
BEGIN;
SELECT COUNT(*) FROM (SELECT 1 FROM $table WHERE id = :id LIMIT 1) t;
COMMIT;
SQL
pgbench -n -M prepared -c 1 -T "$secs" -f "$script" "$url" 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
