#!/usr/bin/env bash
# Statement profile of a command run on the throwaway cluster of test-postgres.sh, from
# pg_stat_statements: every statement's calls, rows and time, and the statements and
# round trips per committed transaction.
#
#   PG_SERVER_OPTS="-c shared_preload_libraries=pg_stat_statements" \
#     scripts/test-postgres.sh --run scripts/pg-profile.sh scripts/bench-sustained.sh
#
# The counts cover the whole command (all its servers and its own psql samples).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${STABLECOIN_TEST_PG_URL:?run under scripts/test-postgres.sh --run}"
ADMIN="${STABLECOIN_TEST_PG_URL%/*}/postgres"
psql=("$PG_BIN/psql" "$ADMIN" -X -q -v ON_ERROR_STOP=1)
"${psql[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
  -c "SELECT pg_stat_statements_reset()" > /dev/null
rc=0
"$@" || rc=$?
echo
echo "== pg_stat_statements (database $(basename "$STABLECOIN_TEST_PG_URL"))"
"${psql[@]}" -P pager=off <<'SQL'
WITH s AS (
  SELECT calls, rows, total_exec_time, regexp_replace(query, '\s+', ' ', 'g') AS q
  FROM pg_stat_statements
  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'stablecoin_test')
)
-- One line per statement text (each fresh schema gives a statement new ids).
SELECT sum(calls) AS calls, sum(rows) AS rows, round(sum(total_exec_time)::numeric, 0) AS ms,
       round((sum(total_exec_time) / sum(calls))::numeric, 3) AS ms_per_call,
       left(q, 110) AS statement
FROM s GROUP BY q ORDER BY sum(calls) DESC LIMIT 40;
WITH s AS (
  SELECT calls, query FROM pg_stat_statements
  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'stablecoin_test')
), t AS (
  SELECT sum(calls) FILTER (WHERE query ILIKE 'commit%') AS commits,
         sum(calls) FILTER (WHERE query ILIKE 'begin%') AS begins,
         sum(calls) AS all_calls
  FROM s
)
SELECT commits, begins, all_calls,
       round((all_calls - 0.0) / nullif(commits, 0), 2) AS statements_per_commit_all,
       round((all_calls - begins - commits) / nullif(commits, 0), 2)
         AS statements_between_begin_and_commit_per_commit
FROM t;
SQL
exit "$rc"
