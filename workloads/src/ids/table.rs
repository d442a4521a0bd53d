//! One table per id kind (`id` primary key, `name` varchar(128) not indexed, `score` integer) on
//! either backend, and the statements the id workloads run on it.
//!
//! Text ids get `COLLATE "C"` on PostgreSQL: under a locale collation Base62 and ULID text would
//! not sort in byte order, and the time-ordered kinds would lose their point.

use super::kinds::{IdKind, IdValue};
use crate::db::postgres::{PgConn, TableCount};
use crate::db::{Backend, Db, DbConfig, Init};
use postgres::types::{IsNull, ToSql as PgToSql, Type, to_sql_checked};
use rusqlite::OptionalExtension;
use rusqlite::types::{ToSql as SqliteToSql, ToSqlOutput, Value, ValueRef};

// Statement indices: shared by both backends; SQLite prepares BEGIN and COMMIT as statements,
// PostgreSQL adds the batch insert through `unnest`.
const INSERT: usize = 0;
const COUNT: usize = 1;
const BY_NAME: usize = 2;
const BY_ID: usize = 3;
const BEGIN: usize = 4;
const COMMIT: usize = 5;
const PG_BATCH: usize = 4;

/// Rows to insert, column by column.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    /// Ids.
    pub ids: Vec<IdValue>,
    /// Names (`entity-{seq}`).
    pub names: Vec<String>,
    /// Scores (`seq % 100`).
    pub scores: Vec<i32>,
}

impl Rows {
    /// `count` rows with fresh ids from `generate`: `entity-{seq}`, `seq % 100`.
    pub fn generate(count: usize, mut generate: impl FnMut() -> IdValue) -> Rows {
        let mut rows = Rows {
            ids: Vec::with_capacity(count),
            names: Vec::with_capacity(count),
            scores: Vec::with_capacity(count),
        };
        for seq in 0..count {
            rows.ids.push(generate());
            rows.names.push(format!("entity-{seq}"));
            rows.scores.push((seq % 100) as i32);
        }
        rows
    }
}

/// A kind's table on either backend.
pub struct IdsDb {
    /// The database.
    pub db: Db,
    kind: IdKind,
}

impl IdsDb {
    /// Creates the kind's empty table and opens the pool.
    pub fn create(cfg: &DbConfig, kind: IdKind) -> anyhow::Result<IdsDb> {
        let t = table(kind);
        let mut statements = vec![
            format!("INSERT INTO {t} (id, name, score) VALUES ($1, $2, $3)"),
            format!("SELECT COUNT(*) FROM {t}"),
            format!("SELECT COUNT(*) FROM {t} WHERE name = $1"),
            format!("SELECT name, score FROM {t} WHERE id = $1"),
        ];
        match cfg.backend {
            Backend::Sqlite(_) => statements.extend(["BEGIN".to_string(), "COMMIT".to_string()]),
            Backend::Postgres => statements.push(format!(
                "INSERT INTO {t} (id, name, score) SELECT * FROM unnest($1::{}[], $2::varchar[], $3::int[])",
                pg_array_type(kind)
            )),
        }
        let db = Db::create(cfg, statements, &mut |mut init| {
            let id_type = match init {
                Init::Sqlite(_) => sqlite_type(kind),
                Init::Postgres(_) => pg_type(kind),
            };
            init.batch(&format!(
                "CREATE TABLE {t} (id {id_type} PRIMARY KEY, name VARCHAR(128) NOT NULL, score INTEGER NOT NULL)"
            ))
        })?;
        Ok(IdsDb { db, kind })
    }

    /// The kind.
    pub fn kind(&self) -> IdKind {
        self.kind
    }

    /// One transaction: insert every row (a prepared insert per row on SQLite, one `unnest`
    /// statement on PostgreSQL), then count the table; returns the count.
    pub fn batch_insert(&self, rows: &Rows) -> anyhow::Result<i64> {
        Ok(match &self.db {
            Db::Sqlite(db) => db.pool.get()?.with_dependent_mut(|owner, st| -> anyhow::Result<i64> {
                st.0[BEGIN].execute([])?;
                let done = (|| {
                    for i in 0..rows.ids.len() {
                        st.0[INSERT].execute(rusqlite::params![rows.ids[i], rows.names[i], rows.scores[i]])?;
                    }
                    let n = st.0[COUNT].query_row([], |r| r.get(0))?;
                    st.0[COMMIT].execute([])?;
                    Ok(n)
                })();
                if done.is_err() && !owner.is_autocommit() {
                    let _ = owner.execute_batch("ROLLBACK");
                }
                done
            })?,
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let PgConn { client, statements } = &mut *conn;
                let mut tx = client.transaction()?;
                tx.execute(&statements[PG_BATCH], &[&rows.ids, &rows.names, &rows.scores])?;
                let n: i64 = tx.query_one(&statements[COUNT], &[])?.get(0);
                tx.commit()?;
                n
            }
        })
    }

    /// One transaction counting the rows called `name`.
    pub fn count_by_name(&self, name: &str) -> anyhow::Result<i64> {
        Ok(match &self.db {
            Db::Sqlite(db) => db.pool.get()?.with_dependent_mut(|_, st| -> rusqlite::Result<i64> {
                st.0[BEGIN].execute([])?;
                let n = st.0[BY_NAME].query_row([name], |r| r.get(0));
                st.0[COMMIT].execute([])?;
                n
            })?,
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let PgConn { client, statements } = &mut *conn;
                let mut tx = client.transaction()?;
                let n: i64 = tx.query_one(&statements[BY_NAME], &[&name])?.get(0);
                tx.commit()?;
                n
            }
        })
    }

    /// One transaction fetching the row keyed `id`.
    pub fn select_by_id(&self, id: &IdValue) -> anyhow::Result<Option<(String, i32)>> {
        Ok(match &self.db {
            Db::Sqlite(db) => db.pool.get()?.with_dependent_mut(|_, st| -> rusqlite::Result<_> {
                st.0[BEGIN].execute([])?;
                let row = st.0[BY_ID].query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional();
                st.0[COMMIT].execute([])?;
                row
            })?,
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let PgConn { client, statements } = &mut *conn;
                let mut tx = client.transaction()?;
                let row = tx.query_opt(&statements[BY_ID], &[id])?.map(|r| (r.get(0), r.get(1)));
                tx.commit()?;
                row
            }
        })
    }

    /// One row, in a transaction of its own (autocommit).
    pub fn insert_one(&self, id: &IdValue, name: &str, score: i32) -> anyhow::Result<()> {
        match &self.db {
            Db::Sqlite(db) => {
                db.pool.get()?.with_dependent_mut(|_, st| st.0[INSERT].execute(rusqlite::params![id, name, score]))?;
            }
            Db::Postgres(db) => {
                let mut conn = db.pool.get()?;
                let PgConn { client, statements } = &mut *conn;
                client.execute(&statements[INSERT], &[id, &name, &score])?;
            }
        }
        Ok(())
    }

    /// Rows in the table.
    pub fn count(&self) -> anyhow::Result<i64> {
        Ok(self.db.query_i64s(&format!("SELECT COUNT(*) FROM {}", table(self.kind)))?[0])
    }

    /// Empties the table.
    pub fn clear(&self) -> anyhow::Result<()> {
        let sql = match self.db.backend() {
            Backend::Sqlite(_) => format!("DELETE FROM {}", table(self.kind)),
            Backend::Postgres => format!("TRUNCATE {}", table(self.kind)),
        };
        self.db.execute_in_tx(&sql, true)
    }

    /// Every stored id, in the database's `ORDER BY id` order, read back as stored.
    pub fn ids_in_stored_order(&self) -> anyhow::Result<Vec<IdValue>> {
        let sql = format!("SELECT id FROM {} ORDER BY id", table(self.kind));
        Ok(match &self.db {
            Db::Sqlite(db) => {
                let conn = db.pool.get()?;
                let mut stmt = conn.borrow_owner().prepare(&sql)?;
                let ids = stmt.query_map([], |r| {
                    Ok(match r.get_ref(0)? {
                        ValueRef::Blob(b) => IdValue::Uuid(uuid::Uuid::from_slice(b).map_err(|e| {
                            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Blob, Box::new(e))
                        })?),
                        ValueRef::Text(t) => IdValue::Text(String::from_utf8_lossy(t).into_owned()),
                        ValueRef::Integer(i) => IdValue::Int(i),
                        other => IdValue::Text(format!("{other:?}")),
                    })
                })?;
                ids.collect::<Result<_, _>>()?
            }
            Db::Postgres(db) => {
                let rows = db.pool.get()?.client.query(&sql, &[])?;
                rows.iter()
                    .map(|r| match self.kind {
                        IdKind::UuidV4 | IdKind::UuidV7 => IdValue::Uuid(r.get(0)),
                        IdKind::Snowflake => IdValue::Int(r.get(0)),
                        _ => IdValue::Text(r.get(0)),
                    })
                    .collect()
            }
        })
    }

    /// PostgreSQL's counts of the kind's table (see [`Db::tallies`]); none on SQLite.
    pub fn tally(&self, counted: &[(TableCount, crate::PerOp)]) -> anyhow::Result<Vec<crate::Tally>> {
        self.db.tallies(&table(self.kind), counted)
    }

    /// Drops what setup created on a server.
    pub fn teardown(&self) -> anyhow::Result<()> {
        self.db.teardown()
    }
}

/// The kind's table name.
pub fn table(kind: IdKind) -> String {
    format!("ids_{}", kind.name())
}

pub(crate) fn sqlite_type(kind: IdKind) -> String {
    match (kind, kind.text_width()) {
        (IdKind::UuidV4 | IdKind::UuidV7, _) => "BLOB".into(),
        (IdKind::Snowflake, _) => "INTEGER".into(),
        (_, Some(w)) => format!("VARCHAR({w})"),
        (_, None) => unreachable!("every other kind is text"),
    }
}

pub(crate) fn pg_type(kind: IdKind) -> String {
    match (kind, kind.text_width()) {
        (IdKind::UuidV4 | IdKind::UuidV7, _) => "UUID".into(),
        (IdKind::Snowflake, _) => "BIGINT".into(),
        (_, Some(w)) => format!("VARCHAR({w}) COLLATE \"C\""),
        (_, None) => unreachable!("every other kind is text"),
    }
}

pub(crate) fn pg_array_type(kind: IdKind) -> &'static str {
    match kind {
        IdKind::UuidV4 | IdKind::UuidV7 => "uuid",
        IdKind::Snowflake => "bigint",
        _ => "varchar",
    }
}

impl SqliteToSql for IdValue {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            IdValue::Uuid(u) => ToSqlOutput::Borrowed(ValueRef::Blob(u.as_bytes())),
            IdValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            IdValue::Int(i) => ToSqlOutput::Owned(Value::Integer(*i)),
        })
    }
}

impl PgToSql for IdValue {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            IdValue::Uuid(u) => PgToSql::to_sql(u, ty, out),
            IdValue::Text(s) => PgToSql::to_sql(s, ty, out),
            IdValue::Int(i) => PgToSql::to_sql(i, ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <uuid::Uuid as PgToSql>::accepts(ty) || <String as PgToSql>::accepts(ty) || <i64 as PgToSql>::accepts(ty)
    }

    to_sql_checked!();
}
