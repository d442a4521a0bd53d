//! PostgreSQL databases: a schema of its own per fork on a real server, a pool of blocking
//! connections each holding its workload's prepared statements, and the schema dropped at
//! teardown.

use super::transport::connector;
use crate::redact::redact;
use crate::{PerOp, Tally};
use anyhow::Context;
use postgres::{Client, Statement};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Makes the connection's backend flush the statistics it holds back when it next goes idle,
/// before it answers: PostgreSQL 15 and later flush a backend's counts at most once a second,
/// and up to 10 s later when the backend sits idle.
pub const FLUSH_STATS: &str = "SELECT pg_stat_force_next_flush()";

/// A counter `pg_stat_user_tables` keeps per table (its column in [`PgDb::tallies`]' query).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableCount {
    /// Scans started on the table, by index or sequentially (`idx_scan + seq_scan`): one per
    /// lookup, whichever plan the server picks (a table of a few pages is read sequentially).
    Scans = 0,
    /// Rows inserted (`n_tup_ins`).
    RowsInserted = 1,
}

impl TableCount {
    /// Its name in a fork's `observed`.
    pub fn name(self) -> &'static str {
        match self {
            TableCount::Scans => "pg_table_scans",
            TableCount::RowsInserted => "pg_rows_inserted",
        }
    }
}

/// The counts [`PgDb::tallies`] records beside the checked ones, in its query's order from
/// column 3, with who keeps them: the table's own counts, and the server's WAL (server-wide).
const RECORDED: [(&str, &str); 12] = [
    ("pg_seq_scan", "PostgreSQL's pg_stat_user_tables"),
    ("pg_idx_scan", "PostgreSQL's pg_stat_user_tables"),
    ("pg_seq_tup_read", "PostgreSQL's pg_stat_user_tables"),
    ("pg_idx_tup_fetch", "PostgreSQL's pg_stat_user_tables"),
    ("pg_tup_upd", "PostgreSQL's pg_stat_user_tables"),
    ("pg_tup_del", "PostgreSQL's pg_stat_user_tables"),
    ("pg_heap_blks", "PostgreSQL's pg_statio_user_tables (hit + read)"),
    ("pg_heap_blks_read", "PostgreSQL's pg_statio_user_tables"),
    ("pg_idx_blks", "PostgreSQL's pg_statio_user_tables (hit + read)"),
    ("pg_idx_blks_read", "PostgreSQL's pg_statio_user_tables"),
    ("pg_wal_records", "PostgreSQL's pg_stat_wal (server-wide)"),
    ("pg_wal_bytes", "PostgreSQL's pg_stat_wal (server-wide)"),
];

/// A blocking connection with its workload's prepared statements.
pub struct PgConn {
    /// The connection.
    pub client: Client,
    /// The statements, in the order the workload listed them.
    pub statements: Vec<Statement>,
}

/// Opens connections whose `search_path` is the fork's schema.
pub struct PgManager {
    config: postgres::Config,
    statements: Vec<String>,
}

impl r2d2::ManageConnection for PgManager {
    type Connection = PgConn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConn, postgres::Error> {
        let mut client = self.config.connect(connector())?;
        let statements = self.statements.iter().map(|sql| client.prepare(sql)).collect::<Result<_, _>>()?;
        Ok(PgConn { client, statements })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(drop)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.client.is_closed()
    }
}

/// A fork's schema and a pool of connections to it.
pub struct PgDb {
    /// Schema name, unique per fork: `harness_<pid>_<nanos>`.
    pub schema: String,
    /// The pool.
    pub pool: r2d2::Pool<PgManager>,
}

/// One clear line for a server that cannot be reached.
pub fn unreachable(url: &str, e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot connect to PostgreSQL at {}: {}; start PostgreSQL or pass --database-url (or DATABASE_URL)",
        redact(url),
        redact(&e.to_string())
    )
}

/// The connection options of `url`, with the connect timeout set. A case's URL carries its
/// transport (`sslmode`, see [`super::transport`]); the harness's housekeeping URLs may carry
/// none, and then the driver's default, `prefer`, reaches a TLS-only server too.
pub fn config(url: &str) -> anyhow::Result<postgres::Config> {
    let mut config = postgres::Config::from_str(url).map_err(|e| {
        anyhow::anyhow!("invalid PostgreSQL URL {}: {e}; pass --database-url postgres://USER@HOST:PORT/DB", redact(url))
    })?;
    config.connect_timeout(CONNECT_TIMEOUT);
    Ok(config)
}

impl PgDb {
    /// Creates a fresh schema, runs `init` in it (tables, seed), then opens the pool whose
    /// connections prepare `statements`. The schema is dropped again if anything fails.
    pub fn create(
        url: &str,
        pool_size: u32,
        statements: Vec<String>,
        init: &mut dyn FnMut(&mut Client) -> anyhow::Result<()>,
    ) -> anyhow::Result<PgDb> {
        let admin_config = config(url)?;
        let mut admin = admin_config.connect(connector()).map_err(|e| unreachable(url, e))?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let schema = format!("harness_{}_{nanos}", std::process::id());
        admin
            .batch_execute(&format!(
                "CREATE SCHEMA {schema}; COMMENT ON SCHEMA {schema} IS '{}'",
                owner_tag(std::process::id())
            ))
            .context("cannot create the fork's schema")?;
        let mut config = admin_config;
        config.options(&format!("-c search_path={schema}"));
        // Set up before the pool exists: each pooled connection prepares its statements on connect.
        let created = config
            .connect(connector())
            .map_err(|e| unreachable(url, e))
            .and_then(|mut client| init(&mut client).context("cannot set up the PostgreSQL schema"))
            .and_then(|()| {
                super::pool_builder(pool_size, CONNECT_TIMEOUT)
                    .build(PgManager { config, statements })
                    .map_err(|e| unreachable(url, e))
            });
        match created {
            Ok(pool) => Ok(PgDb { schema, pool }),
            Err(e) => {
                let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
                Err(e)
            }
        }
    }

    /// Makes every pooled connection flush the statistics it holds back (see [`FLUSH_STATS`]).
    pub fn flush_stats(&self) -> anyhow::Result<()> {
        let held = super::hold_all(&self.pool)?;
        for mut conn in held {
            conn.client.batch_execute(FLUSH_STATS)?;
        }
        Ok(())
    }

    /// After [`PgDb::flush_stats`] (and the flush of any other pool on the schema): the server's
    /// counts of `table` in the fork's schema, and the database's commits; none before
    /// PostgreSQL 15, whose statistics cannot be flushed on demand.
    pub fn tallies(&self, table: &str, counted: &[(TableCount, PerOp)]) -> anyhow::Result<Vec<Tally>> {
        self.flush_stats()?;
        let mut conn = self.pool.get()?;
        let version: i32 = conn.client.query_one("SELECT current_setting('server_version_num')::int", &[])?.get(0);
        if version < 150_000 {
            return Ok(vec![]);
        }
        let row = conn.client.query_one(
            "SELECT coalesce(s.idx_scan, 0) + s.seq_scan, s.n_tup_ins, d.xact_commit,
                    s.seq_scan, coalesce(s.idx_scan, 0), s.seq_tup_read, coalesce(s.idx_tup_fetch, 0),
                    s.n_tup_upd, s.n_tup_del,
                    coalesce(io.heap_blks_hit, 0) + coalesce(io.heap_blks_read, 0),
                    coalesce(io.heap_blks_read, 0),
                    coalesce(io.idx_blks_hit, 0) + coalesce(io.idx_blks_read, 0),
                    coalesce(io.idx_blks_read, 0),
                    w.wal_records, w.wal_bytes::int8
             FROM pg_stat_user_tables s
             JOIN pg_statio_user_tables io ON io.relid = s.relid, pg_stat_database d, pg_stat_wal w
             WHERE s.schemaname = $1 AND s.relname = $2 AND d.datname = current_database()",
            &[&self.schema, &table],
        )?;
        let mut tallies: Vec<Tally> = counted
            .iter()
            .map(|&(count, per_op)| Tally {
                name: count.name().into(),
                value: row.get(count as usize),
                per_op,
                keeper: "PostgreSQL's pg_stat_user_tables",
            })
            .collect();
        tallies.push(Tally {
            name: "pg_xact_commit".into(),
            value: row.get(2),
            per_op: PerOp::AtLeast(1),
            keeper: "PostgreSQL's pg_stat_database",
        });
        tallies.extend(RECORDED.iter().enumerate().map(|(i, &(name, keeper))| Tally {
            name: name.into(),
            value: row.get(3 + i),
            per_op: PerOp::Recorded,
            keeper,
        }));
        Ok(tallies)
    }

    /// Drops the fork's schema and everything in it (see also [`drop_schemas_of`]).
    pub fn drop_schema(&self) -> anyhow::Result<()> {
        let mut conn = self.pool.get()?;
        conn.client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))?;
        Ok(())
    }
}

/// The comment on a fork's schema: which process on which boot of which machine made it, so
/// that a later run drops it only when that process is gone (a server may be shared by
/// machines whose process ids mean nothing here).
fn owner_tag(pid: u32) -> String {
    format!("harness worker {pid} on boot {}", super::stale::boot_id())
}

/// Drops every `harness_…` schema whose worker, on this boot of this machine, is gone (a
/// worker killed while the server was down, say); returns the worker pids whose schemas went.
pub fn drop_stale_schemas(url: &str) -> anyhow::Result<Vec<u32>> {
    let mut client = config(url)?.connect(connector()).map_err(|e| unreachable(url, e))?;
    let rows = client.query(
        "SELECT nspname::text, coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname LIKE 'harness\\_%'",
        &[],
    )?;
    let mut gone = vec![];
    for row in &rows {
        let (schema, comment): (String, String) = (row.get(0), row.get(1));
        let pid = comment.strip_prefix("harness worker ").and_then(|rest| rest.split(' ').next()?.parse::<u32>().ok());
        if let Some(pid) = pid.filter(|&pid| comment == owner_tag(pid) && !super::stale::is_alive(pid)) {
            client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))?;
            gone.push(pid);
        }
    }
    Ok(gone)
}

/// Drops the schemas a worker with process id `pid` created (`harness_{pid}_…`) and could not
/// drop itself (it was killed); returns how many.
pub fn drop_schemas_of(url: &str, pid: u32) -> anyhow::Result<usize> {
    let mut client = config(url)?.connect(connector()).map_err(|e| unreachable(url, e))?;
    let pattern = format!("harness\\_{pid}\\_%");
    let rows = client.query("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE $1", &[&pattern])?;
    for row in &rows {
        let schema: String = row.get(0);
        client.batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))?;
    }
    Ok(rows.len())
}
