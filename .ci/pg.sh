#!/usr/bin/env bash
# Start a local PostgreSQL (Debian package) and print the URL the store tests use.
set -euo pipefail
if ! command -v pg_lsclusters >/dev/null; then
  echo "postgresql is not installed" >&2; exit 1
fi
ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | grep -q "^$ver main"; then
  pg_createcluster "$ver" main >/dev/null
fi
pg_ctlcluster "$ver" main start >/dev/null 2>&1 || true
for _ in $(seq 1 30); do
  pg_isready -q -h 127.0.0.1 -p 5432 && break
  sleep 1
done
runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 <<'SQL' >/dev/null
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'workbench') THEN
    CREATE ROLE workbench LOGIN SUPERUSER PASSWORD 'workbench';
  END IF;
END $$;
SQL
runuser -u postgres -- psql -tAq -c "SELECT 1 FROM pg_database WHERE datname='workbench_test'" | grep -q 1 \
  || runuser -u postgres -- createdb -O workbench workbench_test
echo "postgresql+psycopg://workbench:workbench@127.0.0.1:5432/workbench_test"
