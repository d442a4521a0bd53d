//! One connection to either backend, behind the few calls the store makes: a batch, a
//! statement with parameters, a query of integers, and the points query. The SQL is shared
//! (`$n` parameters read the same in SQLite and PostgreSQL); errors are the driver's words.

use super::StoredPoint;
use std::time::Duration;

/// An open connection.
pub(super) enum Conn {
    /// An SQLite file.
    Sqlite(rusqlite::Connection),
    /// A PostgreSQL database.
    Postgres(Box<postgres::Client>),
}

/// A parameter of the store's statements, typed as PostgreSQL wants it.
pub(super) enum Value<'a> {
    /// TEXT, or NULL.
    Text(Option<&'a str>),
    /// BIGINT, or NULL.
    Int(Option<i64>),
    /// DOUBLE PRECISION.
    Real(f64),
}

impl Conn {
    /// An SQLite file, its directory made, waiting for the writer lock rather than failing.
    pub(super) fn sqlite(path: &std::path::Path) -> Result<Conn, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        let c = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
        c.busy_timeout(Duration::from_secs(60))
            .and_then(|()| c.pragma_update(None, "journal_mode", "WAL"))
            .map_err(|e| e.to_string())?;
        Ok(Conn::Sqlite(c))
    }

    /// A PostgreSQL connection (no TLS), given up after 10 s unless the URL says otherwise.
    pub(super) fn postgres(url: &str) -> Result<Conn, String> {
        let mut cfg = url.parse::<postgres::Config>().map_err(|e| with_causes(&e))?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(Duration::from_secs(10));
        }
        Ok(Conn::Postgres(Box::new(cfg.connect(postgres::NoTls).map_err(|e| with_causes(&e))?)))
    }

    /// Whether it is SQLite (whose writer lock `BEGIN IMMEDIATE` takes).
    pub(super) fn is_sqlite(&self) -> bool {
        matches!(self, Conn::Sqlite(_))
    }

    /// Runs `sql`, one or more statements without parameters.
    pub(super) fn batch(&mut self, sql: &str) -> Result<(), String> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(|e| e.to_string()),
            Conn::Postgres(c) => c.batch_execute(sql).map_err(|e| e.to_string()),
        }
    }

    /// Runs one statement; the rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[Value<'_>]) -> Result<u64, String> {
        match self {
            Conn::Sqlite(c) => {
                let p: Vec<Box<dyn rusqlite::ToSql + '_>> = params.iter().map(Value::sqlite).collect();
                let mut stmt = c.prepare_cached(sql).map_err(|e| e.to_string())?;
                stmt.execute(rusqlite::params_from_iter(p.iter())).map(|n| n as u64).map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => {
                let p: Vec<Box<dyn postgres::types::ToSql + Sync + '_>> = params.iter().map(Value::postgres).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = p.iter().map(AsRef::as_ref).collect();
                c.execute(sql, &refs).map_err(|e| e.to_string())
            }
        }
    }

    /// The first column, an integer, of every row `sql` returns.
    pub(super) fn ints(&mut self, sql: &str, params: &[Value<'_>]) -> Result<Vec<i64>, String> {
        match self {
            Conn::Sqlite(c) => {
                let p: Vec<Box<dyn rusqlite::ToSql + '_>> = params.iter().map(Value::sqlite).collect();
                let mut stmt = c.prepare_cached(sql).map_err(|e| e.to_string())?;
                let rows =
                    stmt.query_map(rusqlite::params_from_iter(p.iter()), |r| r.get(0)).map_err(|e| e.to_string())?;
                rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => {
                let p: Vec<Box<dyn postgres::types::ToSql + Sync + '_>> = params.iter().map(Value::postgres).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = p.iter().map(AsRef::as_ref).collect();
                Ok(c.query(sql, &refs).map_err(|e| e.to_string())?.iter().map(|r| r.get(0)).collect())
            }
        }
    }

    /// The first `n` columns, texts (or NULL), of every row `sql` returns.
    pub(super) fn texts(
        &mut self,
        sql: &str,
        params: &[Value<'_>],
        n: usize,
    ) -> Result<Vec<Vec<Option<String>>>, String> {
        match self {
            Conn::Sqlite(c) => {
                let p: Vec<Box<dyn rusqlite::ToSql + '_>> = params.iter().map(Value::sqlite).collect();
                let mut stmt = c.prepare_cached(sql).map_err(|e| e.to_string())?;
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(p.iter()), |r| (0..n).map(|i| r.get(i)).collect())
                    .map_err(|e| e.to_string())?;
                rows.collect::<Result<_, _>>().map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => {
                let p: Vec<Box<dyn postgres::types::ToSql + Sync + '_>> = params.iter().map(Value::postgres).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = p.iter().map(AsRef::as_ref).collect();
                let rows = c.query(sql, &refs).map_err(|e| e.to_string())?;
                Ok(rows.iter().map(|r| (0..n).map(|i| r.get(i)).collect()).collect())
            }
        }
    }

    /// Every row of `sql` (the points query: 8 run texts, 5 integers, 4 point texts, a value,
    /// in the column order [`super::row`] takes them).
    pub(super) fn points(&mut self, sql: &str) -> Result<Vec<StoredPoint>, String> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare(sql).map_err(|e| e.to_string())?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok(super::row(
                            [r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?],
                            [r.get(8)?, r.get(9)?, r.get(10)?, r.get(11)?, r.get(12)?],
                            [r.get(13)?, r.get(14)?, r.get(15)?, r.get(16)?],
                            r.get(17)?,
                        ))
                    })
                    .map_err(|e| e.to_string())?;
                rows.collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())
            }
            Conn::Postgres(c) => Ok(c
                .query(sql, &[])
                .map_err(|e| e.to_string())?
                .iter()
                .map(|r| {
                    super::row(
                        [r.get(0), r.get(1), r.get(2), r.get(3), r.get(4), r.get(5), r.get(6), r.get(7)],
                        [r.get(8), r.get(9), r.get(10), r.get(11), r.get(12)],
                        [r.get(13), r.get(14), r.get(15), r.get(16)],
                        r.get(17),
                    )
                })
                .collect()),
        }
    }
}

impl Value<'_> {
    fn sqlite(&self) -> Box<dyn rusqlite::ToSql + '_> {
        match self {
            Value::Text(t) => Box::new(*t),
            Value::Int(i) => Box::new(*i),
            Value::Real(r) => Box::new(*r),
        }
    }

    fn postgres(&self) -> Box<dyn postgres::types::ToSql + Sync + '_> {
        match self {
            Value::Text(t) => Box::new(*t),
            Value::Int(i) => Box::new(*i),
            Value::Real(r) => Box::new(*r),
        }
    }
}

/// `e` and every cause under it, in one line (postgres says only "error connecting to server").
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text += &format!(": {c}");
        cause = c.source();
    }
    text
}
