-- PostgreSQL health diagnostics. Run with: psql -X -f diagnostics.sql "$DATABASE_URL"
\pset pager off
\timing off

\echo '== Top 15 statements by total execution time (needs pg_stat_statements) =='
SELECT round(total_exec_time::numeric / 1000, 1) AS total_s,
       calls,
       round(mean_exec_time::numeric, 2) AS mean_ms,
       round(100 * total_exec_time / sum(total_exec_time) OVER (), 1) AS pct,
       left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS query
FROM pg_stat_statements
ORDER BY total_exec_time DESC
LIMIT 15;

\echo '== Sessions by state and wait event =='
SELECT state, wait_event_type, wait_event, count(*)
FROM pg_stat_activity
WHERE backend_type = 'client backend'
GROUP BY 1, 2, 3
ORDER BY 4 DESC;

\echo '== Blocked sessions and who blocks them =='
SELECT blocked.pid AS blocked_pid,
       blocked.usename,
       pg_blocking_pids(blocked.pid) AS blocked_by,
       now() - blocked.query_start AS waiting_for,
       left(blocked.query, 80) AS query
FROM pg_stat_activity AS blocked
WHERE cardinality(pg_blocking_pids(blocked.pid)) > 0;

\echo '== Long transactions (over 5 minutes) =='
SELECT pid, usename, state, now() - xact_start AS xact_age, left(query, 80) AS query
FROM pg_stat_activity
WHERE xact_start < now() - interval '5 minutes'
ORDER BY xact_start;

\echo '== Cache hit ratio per database =='
SELECT datname,
       round(100.0 * blks_hit / nullif(blks_hit + blks_read, 0), 2) AS hit_pct
FROM pg_stat_database
WHERE datname IS NOT NULL
ORDER BY hit_pct NULLS LAST;

\echo '== Tables with most dead tuples =='
SELECT relname,
       n_live_tup,
       n_dead_tup,
       round(100.0 * n_dead_tup / nullif(n_live_tup + n_dead_tup, 0), 1) AS dead_pct,
       last_autovacuum,
       last_autoanalyze
FROM pg_stat_user_tables
ORDER BY n_dead_tup DESC
LIMIT 15;

\echo '== Transaction ID wraparound risk =='
SELECT datname, age(datfrozenxid) AS xid_age,
       round(100.0 * age(datfrozenxid) / 2000000000, 1) AS pct_to_wraparound
FROM pg_database
ORDER BY xid_age DESC;

\echo '== Tables read mostly by sequential scans =='
SELECT relname, seq_scan, seq_tup_read, idx_scan,
       pg_size_pretty(pg_relation_size(relid)) AS size
FROM pg_stat_user_tables
WHERE seq_scan > 0
ORDER BY seq_tup_read DESC
LIMIT 15;

\echo '== Unused indexes (idx_scan = 0, not unique) =='
SELECT s.relname AS table_name,
       s.indexrelname AS index_name,
       pg_size_pretty(pg_relation_size(s.indexrelid)) AS index_size
FROM pg_stat_user_indexes AS s
JOIN pg_index AS i ON i.indexrelid = s.indexrelid
WHERE s.idx_scan = 0 AND NOT i.indisunique AND NOT i.indisprimary
ORDER BY pg_relation_size(s.indexrelid) DESC;

\echo '== Invalid indexes (failed CREATE INDEX CONCURRENTLY) =='
SELECT indexrelid::regclass AS index_name, indrelid::regclass AS table_name
FROM pg_index
WHERE NOT indisvalid;

\echo '== Key settings =='
SELECT name, setting, unit
FROM pg_settings
WHERE name IN ('shared_buffers', 'effective_cache_size', 'work_mem', 'maintenance_work_mem',
               'random_page_cost', 'max_wal_size', 'checkpoint_completion_target',
               'max_connections', 'autovacuum_vacuum_scale_factor',
               'idle_in_transaction_session_timeout')
ORDER BY name;
