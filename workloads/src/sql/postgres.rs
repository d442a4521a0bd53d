//! The PostgreSQL fixture: a schema of its own per fork on a real server, a pool of blocking
//! connections with the select prepared once per connection, and the schema dropped at teardown.

use super::{SEED_VALUES, SELECT_BY_ID};
use crate::redact::redact;
use anyhow::Context;
use postgres::{Client, NoTls, Statement};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A blocking connection with its prepared select.
pub struct PgConn {
    /// The connection.
    pub client: Client,
    /// `SELECT_BY_ID`, prepared on this connection.
    pub select: Statement,
}

/// Opens connections whose `search_path` is the fork's schema.
pub struct PgManager {
    config: postgres::Config,
}

impl r2d2::ManageConnection for PgManager {
    type Connection = PgConn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConn, postgres::Error> {
        let mut client = self.config.connect(NoTls)?;
        let select = client.prepare(SELECT_BY_ID)?;
        Ok(PgConn { client, select })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(drop)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.client.is_closed()
    }
}

/// A seeded schema and a pool of connections to it.
pub struct PgDb {
    /// Schema name, unique per fork: `harness_<pid>_<nanos>`.
    pub schema: String,
    /// Connection options shared by every connection (search_path set to the schema).
    pub config: postgres::Config,
    /// The URL, password redacted, for messages.
    pub url_redacted: String,
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

/// The connection options of `url`, with the connect timeout set.
pub fn config(url: &str) -> anyhow::Result<postgres::Config> {
    let mut config = postgres::Config::from_str(url).map_err(|e| {
        anyhow::anyhow!("invalid PostgreSQL URL {}: {e}; pass --database-url postgres://USER@HOST:PORT/DB", redact(url))
    })?;
    config.connect_timeout(CONNECT_TIMEOUT);
    Ok(config)
}

impl PgDb {
    /// Creates a fresh schema, seeds `row_count` rows in one transaction, opens the pool.
    pub fn create(url: &str, row_count: usize, pool_size: u32) -> anyhow::Result<PgDb> {
        let admin_config = config(url)?;
        let mut admin = admin_config.connect(NoTls).map_err(|e| unreachable(url, e))?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let schema = format!("harness_{}_{nanos}", std::process::id());
        admin.batch_execute(&format!("CREATE SCHEMA {schema}")).context("cannot create the fork's schema")?;
        let mut config = admin_config;
        config.options(&format!("-c search_path={schema}"));
        // Seed before the pool exists: each pooled connection prepares the select on connect.
        let created = config
            .connect(NoTls)
            .map_err(|e| unreachable(url, e))
            .and_then(|mut client| seed(&mut client, row_count))
            .and_then(|()| PgDb::open(schema.clone(), config, url, pool_size));
        if created.is_err() {
            let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
        created
    }

    fn open(schema: String, config: postgres::Config, url: &str, pool_size: u32) -> anyhow::Result<PgDb> {
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .test_on_check_out(false)
            .connection_timeout(CONNECT_TIMEOUT)
            .build(PgManager { config: config.clone() })
            .map_err(|e| unreachable(url, e))?;
        Ok(PgDb { schema, config, url_redacted: redact(url), pool })
    }

    /// Drops the fork's schema and everything in it.
    pub fn drop_schema(&self) -> anyhow::Result<()> {
        let mut conn = self.pool.get()?;
        conn.client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema))?;
        Ok(())
    }
}

fn seed(client: &mut Client, row_count: usize) -> anyhow::Result<()> {
    client.batch_execute(
        "CREATE TABLE benchmark_users (
             id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
             username VARCHAR(128) NOT NULL,
             email VARCHAR(192) NOT NULL,
             age INTEGER NOT NULL
         )",
    )?;
    let mut tx = client.transaction()?;
    tx.execute(
        "INSERT INTO benchmark_users (username, email, age) SELECT '', '', 0 FROM generate_series(1, $1::bigint)",
        &[&(row_count as i64)],
    )?;
    tx.batch_execute(SEED_VALUES)?;
    tx.batch_execute("ANALYZE benchmark_users")?;
    tx.commit()?;
    Ok(())
}

/// One op: `BEGIN`, the prepared count of one id, `COMMIT`.
pub fn select_in_tx(conn: &mut PgConn, id: i64) -> Result<i64, postgres::Error> {
    let PgConn { client, select } = conn;
    let mut tx = client.transaction()?;
    let n: i64 = tx.query_one(&*select, &[&id])?.get(0);
    tx.commit()?;
    Ok(n)
}
