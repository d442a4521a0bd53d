//! The growing table on either backend: created in one of two layouts, filled by batches, and
//! observed after every step — what the database holds and what it wrote.
//!
//! PostgreSQL: `pg_relation_size` of the table and of the key's index, the WAL position's
//! advance since setup (`pg_current_wal_lsn`), full-page images (`pg_stat_wal.wal_fpi`), and
//! the key index's buffer hits and reads (`pg_statio_user_indexes`). WAL and full-page images
//! are the server's, not the table's alone: another client's writes would count too.
//! SQLite (WAL file): the table's and its indexes' bytes (`dbstat`), the database's pages
//! (`PRAGMA page_count`, checkpointed and not), pages written to the WAL
//! and page-cache hits and misses of the pooled connections (`sqlite3_db_status`), and the
//! WAL file's size. Each step also records the memory that holds pages (`shared_buffers_bytes`,
//! `page_cache_bytes`), so that a reader sees where the key index outgrew it.

use crate::db::postgres::{PgConn, TableCount};
use crate::db::{Backend, Db, DbConfig, Init, Storage};
use crate::ids::table::{pg_array_type, pg_type, sqlite_type, table as table_name};
use crate::ids::{IdKind, IdValue};
use crate::{PerOp, Tally};

/// Where the key sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The id is the primary key.
    KeyPk,
    /// A serial integer primary key, and a unique index on the id.
    SerialPk,
}

impl Layout {
    /// The layout a `layout` param value names.
    pub fn from_param(value: &str) -> Layout {
        if value == "serial_pk" { Layout::SerialPk } else { Layout::KeyPk }
    }
}

// SQLite's statements; PostgreSQL prepares only the insert.
const INSERT: usize = 0;
const BEGIN: usize = 1;
const COMMIT: usize = 2;

/// Bytes of a WAL frame's header in SQLite (each frame holds one page).
const SQLITE_WAL_FRAME_HEADER: i64 = 24;

/// One kind's growing table.
pub struct GrowthTable {
    db: Db,
    kind: IdKind,
    /// PostgreSQL: the WAL position when setup ended.
    wal_start: i64,
    /// The memory that holds pages: PostgreSQL's `shared_buffers`, SQLite's page cache (bytes).
    memory: i64,
}

impl GrowthTable {
    /// Creates the empty table with its key index (`{table}_key`, SQLite's key_pk: the primary key's).
    pub fn create(cfg: &DbConfig, kind: IdKind, layout: Layout) -> anyhow::Result<GrowthTable> {
        let t = table_name(kind);
        let statements = match cfg.backend {
            Backend::Sqlite(_) => {
                vec![format!("INSERT INTO {t} (id, name, score) VALUES (?1, ?2, ?3)"), "BEGIN".into(), "COMMIT".into()]
            }
            Backend::Postgres => vec![format!(
                "INSERT INTO {t} (id, name, score) SELECT * FROM unnest($1::{}[], $2::varchar[], $3::int[])",
                pg_array_type(kind)
            )],
        };
        let db = Db::create(cfg, statements, &mut |mut init| {
            let sql = create_sql(&init, kind, layout);
            init.batch(&sql)
        })?;
        let mut table = GrowthTable { db, kind, wal_start: 0, memory: 0 };
        table.memory = match &table.db {
            Db::Postgres(_) => {
                table.wal_start =
                    table.db.query_i64s("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")?[0];
                let sql = "SELECT setting::bigint * current_setting('block_size')::bigint FROM pg_settings WHERE name = 'shared_buffers'";
                table.db.query_i64s(sql)?[0]
            }
            // cache_size: pages when positive, KiB when negative.
            Db::Sqlite(_) => match table.db.query_i64s("PRAGMA cache_size")?[0] {
                kib if kib < 0 => -kib * 1024,
                pages => pages * table.db.query_i64s("PRAGMA page_size")?[0],
            },
        };
        Ok(table)
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// PostgreSQL's `shared_buffers` in bytes; `None` on SQLite.
    pub fn shared_buffers_bytes(&self) -> Option<u64> {
        matches!(self.db, Db::Postgres(_)).then_some(self.memory.unsigned_abs())
    }

    /// Inserts `ids` as rows `first..` (`entity-{n}`, score `n % 100`) in one transaction.
    pub fn insert(&self, ids: &[IdValue], first: i64) -> anyhow::Result<()> {
        let names: Vec<String> = (first..).take(ids.len()).map(|n| format!("entity-{n}")).collect();
        let scores: Vec<i32> = (first..).take(ids.len()).map(|n| (n % 100) as i32).collect();
        match &self.db {
            Db::Sqlite(db) => db.pool.get()?.with_dependent_mut(|owner, st| -> anyhow::Result<()> {
                st.0[BEGIN].execute([])?;
                let done = (|| {
                    for ((id, name), score) in ids.iter().zip(&names).zip(&scores) {
                        st.0[INSERT].execute(rusqlite::params![id, name, score])?;
                    }
                    st.0[COMMIT].execute([])?;
                    Ok(())
                })();
                if done.is_err() && !owner.is_autocommit() {
                    let _ = owner.execute_batch("ROLLBACK");
                }
                done
            }),
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let PgConn { client, statements } = &mut *conn;
                client.execute(&statements[INSERT], &[&ids, &names, &scores])?;
                Ok(())
            }
        }
    }

    /// Rows in the table.
    pub fn count(&self) -> anyhow::Result<i64> {
        Ok(self.db.query_i64s(&format!("SELECT COUNT(*) FROM {}", table_name(self.kind)))?[0])
    }

    /// What the database holds and wrote so far (see the module's description).
    pub fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        match &self.db {
            Db::Postgres(db) => {
                db.flush_stats()?;
                let t = table_name(self.kind);
                let sql = format!(
                    "SELECT pg_relation_size('{t}'), pg_relation_size('{t}_key'), pg_indexes_size('{t}'),
                            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint - {},
                            (SELECT wal_fpi FROM pg_stat_wal),
                            coalesce(s.idx_blks_read, 0), coalesce(s.idx_blks_hit, 0)
                     FROM pg_statio_user_indexes s
                     WHERE s.schemaname = current_schema() AND s.indexrelname = '{t}_key'",
                    self.wal_start
                );
                let row = db.pool.get()?.client.query_one(&sql, &[])?;
                let names = [
                    "table_bytes",
                    "key_index_bytes",
                    "index_bytes",
                    "wal_bytes",
                    "wal_fpi",
                    "idx_blks_read",
                    "idx_blks_hit",
                ];
                let mut observed: Vec<_> = names.iter().enumerate().map(|(i, &n)| (n, row.get::<_, i64>(i))).collect();
                observed.push(("shared_buffers_bytes", self.memory));
                Ok(observed)
            }
            Db::Sqlite(db) => self.observe_sqlite(db),
        }
    }

    fn observe_sqlite(&self, db: &crate::db::sqlite::SqliteDb) -> anyhow::Result<Vec<(&'static str, i64)>> {
        let t = table_name(self.kind);
        let [table_bytes, index_bytes, page_size, page_count] = {
            let conn = db.pool.get()?;
            let c = conn.borrow_owner();
            let bytes =
                |sql: &str| c.query_row(sql, [&t], |r| r.get::<_, Option<i64>>(0)).map(Option::unwrap_or_default);
            [
                bytes("SELECT sum(pgsize) FROM dbstat WHERE name = ?1")?,
                bytes(
                    "SELECT sum(pgsize) FROM dbstat WHERE name IN (SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?1)",
                )?,
                c.query_row("PRAGMA page_size", [], |r| r.get(0))?,
                c.query_row("PRAGMA page_count", [], |r| r.get(0))?,
            ]
        };
        let [written, hits, misses] = db.page_cache_counts()?;
        let mut observed = vec![
            ("table_bytes", table_bytes),
            ("index_bytes", index_bytes),
            ("page_count", page_count),
            ("pages_written", written),
            ("cache_hits", hits),
            ("cache_misses", misses),
            ("page_cache_bytes", self.memory),
        ];
        if db.storage() == Storage::File {
            let wal = std::fs::metadata(format!("{}-wal", db.path().display())).map_or(0, |m| m.len() as i64);
            observed.push(("wal_bytes", written * (page_size + SQLITE_WAL_FRAME_HEADER)));
            observed.push(("wal_file_bytes", wal));
        }
        Ok(observed)
    }

    /// The server's count of inserted rows (PostgreSQL) or the statement runs (SQLite: BEGIN,
    /// one insert per row, COMMIT), `rows` rows per op.
    pub fn tally(&self, rows: i64) -> anyhow::Result<Vec<Tally>> {
        let mut tallies =
            self.db.tallies(&table_name(self.kind), &[(TableCount::RowsInserted, PerOp::Exactly(rows))])?;
        tallies.extend(self.db.statement_tally(rows + 2)?);
        Ok(tallies)
    }

    /// Drops what setup created on a server.
    pub fn teardown(&self) -> anyhow::Result<()> {
        self.db.teardown()
    }
}

/// The table and its key index in `layout`.
fn create_sql(init: &Init<'_>, kind: IdKind, layout: Layout) -> String {
    let t = table_name(kind);
    let (id_type, serial) = match init {
        Init::Sqlite(_) => (sqlite_type(kind), "INTEGER PRIMARY KEY"),
        Init::Postgres(_) => (pg_type(kind), "BIGSERIAL PRIMARY KEY"),
    };
    let columns = "name VARCHAR(128) NOT NULL, score INTEGER NOT NULL";
    match (layout, init) {
        (Layout::KeyPk, Init::Postgres(_)) => {
            format!("CREATE TABLE {t} (id {id_type}, {columns}, CONSTRAINT {t}_key PRIMARY KEY (id))")
        }
        (Layout::KeyPk, Init::Sqlite(_)) => format!("CREATE TABLE {t} (id {id_type} PRIMARY KEY, {columns})"),
        (Layout::SerialPk, _) => format!(
            "CREATE TABLE {t} (seq {serial}, id {id_type} NOT NULL, {columns}); CREATE UNIQUE INDEX {t}_key ON {t} (id)"
        ),
    }
}
