//! The `ids` group's operations through Diesel's DSL and transaction, on the same table of each
//! id kind as their raw twins: `orm/diesel_ids_select_by_id` (↔ `ids/select_by_id`) and
//! `orm/diesel_ids_batch_insert` (↔ `ids/batch_insert`).
//!
//! Diesel's schema is static, so each kind's table is declared once per SQL type of its key:
//! UUIDs are `Binary` (a 16-byte blob) on SQLite and `Uuid` on PostgreSQL, Snowflake ids
//! `BigInt`, the text kinds `Varchar` on both.

use super::DieselPool;
use crate::ids::kinds::{IdKind, IdValue};
use crate::ids::{IdGenerator, IdsCase, IdsDb, Rows, Seeded};
use crate::{Phase, Workload};
use diesel::prelude::*;

/// Declares a kind's table (`ids_<kind>`: `id`, `name`, `score`) with its key's SQL type.
macro_rules! id_table {
    ($module:ident, $sql_name:literal, $key:ident) => {
        #[allow(missing_docs, unreachable_pub)]
        mod $module {
            diesel::table! {
                #[sql_name = $sql_name]
                t (id) {
                    id -> $key,
                    name -> Varchar,
                    score -> Integer,
                }
            }
        }
    };
}

id_table!(uuid_v4_blob, "ids_uuid_v4", Binary);
id_table!(uuid_v7_blob, "ids_uuid_v7", Binary);
id_table!(uuid_v4_pg, "ids_uuid_v4", Uuid);
id_table!(uuid_v7_pg, "ids_uuid_v7", Uuid);
id_table!(snowflake, "ids_snowflake", BigInt);
id_table!(ulid, "ids_ulid", Varchar);
id_table!(base62_uuid_v7, "ids_base62_uuid_v7", Varchar);
id_table!(ksuid, "ids_ksuid", Varchar);
id_table!(ksuid_millis, "ids_ksuid_millis", Varchar);

/// One fetch in Diesel's words, in its transaction block.
macro_rules! fetch_in_tx {
    ($module:ident, $conn:expr, $key:expr) => {
        $conn.transaction::<_, diesel::result::Error, _>(|c| {
            $module::t::table
                .filter($module::t::id.eq($key))
                .select(($module::t::name, $module::t::score))
                .first::<(String, i32)>(c)
                .optional()
        })
    };
}

/// The fetch of `id` from `kind`'s table on a connection of either backend.
macro_rules! fetch_by_kind {
    ($conn:expr, $kind:expr, $id:expr, $uuid_v4:ident, $uuid_v7:ident, $uuid:expr) => {
        match ($kind, $id) {
            (IdKind::UuidV4, IdValue::Uuid(u)) => fetch_in_tx!($uuid_v4, $conn, $uuid(u)),
            (IdKind::UuidV7, IdValue::Uuid(u)) => fetch_in_tx!($uuid_v7, $conn, $uuid(u)),
            (IdKind::Snowflake, IdValue::Int(i)) => fetch_in_tx!(snowflake, $conn, *i),
            (IdKind::Ulid, IdValue::Text(s)) => fetch_in_tx!(ulid, $conn, s.as_str()),
            (IdKind::Base62UuidV7, IdValue::Text(s)) => fetch_in_tx!(base62_uuid_v7, $conn, s.as_str()),
            (IdKind::Ksuid, IdValue::Text(s)) => fetch_in_tx!(ksuid, $conn, s.as_str()),
            (IdKind::KsuidMillis, IdValue::Text(s)) => fetch_in_tx!(ksuid_millis, $conn, s.as_str()),
            (kind, id) => return Err(anyhow::anyhow!("{id:?} is not a {} id", kind.name())),
        }
    };
}

/// The key of a generated id as Diesel binds it, per SQL type (the generator of a kind makes
/// only its own variant).
fn blob(id: &IdValue) -> Vec<u8> {
    match id {
        IdValue::Uuid(u) => u.as_bytes().to_vec(),
        other => unreachable!("a UUID kind generated {other:?}"),
    }
}

fn uuid(id: &IdValue) -> uuid::Uuid {
    match id {
        IdValue::Uuid(u) => *u,
        other => unreachable!("a UUID kind generated {other:?}"),
    }
}

fn int(id: &IdValue) -> i64 {
    match id {
        IdValue::Int(i) => *i,
        other => unreachable!("Snowflake generated {other:?}"),
    }
}

fn text(id: &IdValue) -> &str {
    match id {
        IdValue::Text(s) => s,
        other => unreachable!("a text kind generated {other:?}"),
    }
}

/// One batch in Diesel's words: one `insert_into(...).values(&rows)` and the count, in a
/// transaction.
macro_rules! insert_in_tx {
    ($module:ident, $conn:expr, $rows:expr, $key:expr) => {{
        let values: Vec<_> = $rows
            .ids
            .iter()
            .zip(&$rows.names)
            .zip(&$rows.scores)
            .map(|((id, name), score)| {
                ($module::t::id.eq($key(id)), $module::t::name.eq(name.as_str()), $module::t::score.eq(*score))
            })
            .collect();
        $conn.transaction::<i64, diesel::result::Error, _>(|c| {
            diesel::insert_into($module::t::table).values(&values).execute(c)?;
            $module::t::table.count().get_result(c)
        })
    }};
}

/// The batch insert into `kind`'s table on a connection of either backend.
macro_rules! insert_by_kind {
    ($conn:expr, $kind:expr, $rows:expr, $uuid_v4:ident, $uuid_v7:ident, $uuid:expr) => {
        match $kind {
            IdKind::UuidV4 => insert_in_tx!($uuid_v4, $conn, $rows, $uuid),
            IdKind::UuidV7 => insert_in_tx!($uuid_v7, $conn, $rows, $uuid),
            IdKind::Snowflake => insert_in_tx!(snowflake, $conn, $rows, int),
            IdKind::Ulid => insert_in_tx!(ulid, $conn, $rows, text),
            IdKind::Base62UuidV7 => insert_in_tx!(base62_uuid_v7, $conn, $rows, text),
            IdKind::Ksuid => insert_in_tx!(ksuid, $conn, $rows, text),
            IdKind::KsuidMillis => insert_in_tx!(ksuid_millis, $conn, $rows, text),
        }
    };
}

/// `orm/diesel_ids_batch_insert`: every op inserts `row_count` fresh rows into the kind's empty
/// table through Diesel (one `insert_into(…).values(&rows)`), then counts them, in one
/// transaction; the table is emptied before each op, untimed, as the twin's is.
pub struct DieselIdsBatchInsert {
    table: IdsDb,
    ids: IdGenerator,
    row_count: usize,
    diesel: DieselPool,
}

impl DieselIdsBatchInsert {
    /// Creates the kind's empty table (raw driver, as the twin does) and opens the Diesel pool.
    pub fn create(case: &IdsCase) -> anyhow::Result<DieselIdsBatchInsert> {
        let table = IdsDb::create(&case.db, case.kind)?;
        let opened = case
            .generator()
            .and_then(|ids| Ok((ids, DieselPool::open_on(&table.db, &case.db.database_url, case.db.pool_size)?)));
        match opened {
            Ok((ids, diesel)) => Ok(DieselIdsBatchInsert { table, ids, row_count: case.row_count, diesel }),
            Err(e) => {
                let _ = table.teardown();
                Err(e)
            }
        }
    }

    /// One op as measured: fresh ids, the insert and the count; returns the count.
    pub fn insert_batch(&self) -> anyhow::Result<i64> {
        let rows = Rows::generate(self.row_count, || self.ids.generate());
        let kind = self.table.kind();
        Ok(match &self.diesel {
            DieselPool::Sqlite(pool) => insert_by_kind!(pool.get()?, kind, rows, uuid_v4_blob, uuid_v7_blob, blob)?,
            DieselPool::Postgres(pool) => insert_by_kind!(pool.get()?, kind, rows, uuid_v4_pg, uuid_v7_pg, uuid)?,
        })
    }
}

impl Workload for DieselIdsBatchInsert {
    /// As the twin's: ids read clocks, and their values decide each insert's index path.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = ();
    type Output = i64;
    const RESET_PER_OP: bool = true;
    fn local(&self, _: usize) -> anyhow::Result<()> {
        Ok(())
    }
    fn reset(&self, _: &mut ()) -> anyhow::Result<()> {
        self.table.clear()
    }
    fn op(&self, _: &mut ()) -> i64 {
        self.insert_batch()
            .unwrap_or_else(|e| self.table.db.backend().op_failed(format_args!("Diesel batch insert failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        crate::ids::check_batch_insert(&self.table, self.row_count, || self.insert_batch())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.table.teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        let rows = crate::PerOp::Exactly(self.row_count as i64);
        self.table.tally(&[(crate::db::postgres::TableCount::RowsInserted, rows)])
    }
}

/// `orm/diesel_ids_select_by_id`.
pub struct DieselIdsSelectById {
    seeded: Seeded,
    diesel: DieselPool,
}

impl DieselIdsSelectById {
    /// Seeds the kind's table (raw driver, as the twin does) and opens the Diesel pool.
    pub fn create(case: &IdsCase) -> anyhow::Result<DieselIdsSelectById> {
        let seeded = Seeded::create(case)?;
        match DieselPool::open_on(&seeded.table.db, &case.db.database_url, case.db.pool_size) {
            Ok(diesel) => Ok(DieselIdsSelectById { seeded, diesel }),
            Err(e) => {
                let _ = seeded.table.teardown();
                Err(e)
            }
        }
    }

    /// One op as measured: the row keyed `id`, in a transaction.
    pub fn fetch(&self, id: &IdValue) -> anyhow::Result<Option<(String, i32)>> {
        let kind = self.seeded.table.kind();
        Ok(match &self.diesel {
            DieselPool::Sqlite(pool) => {
                let blob = |u: &uuid::Uuid| u.as_bytes().to_vec();
                fetch_by_kind!(pool.get()?, kind, id, uuid_v4_blob, uuid_v7_blob, blob)?
            }
            DieselPool::Postgres(pool) => {
                let uuid = |u: &uuid::Uuid| *u;
                fetch_by_kind!(pool.get()?, kind, id, uuid_v4_pg, uuid_v7_pg, uuid)?
            }
        })
    }
}

impl Workload for DieselIdsSelectById {
    /// The keys are random or time-based, as the twin's.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = usize;
    type Output = Option<(String, i32)>;
    fn local(&self, thread: usize) -> anyhow::Result<usize> {
        Ok(thread.wrapping_mul(7919) % self.seeded.rows.ids.len().max(1))
    }
    fn op(&self, next: &mut usize) -> Option<(String, i32)> {
        let ids = &self.seeded.rows.ids;
        let id = &ids[*next];
        *next = if *next + 1 == ids.len() { 0 } else { *next + 1 };
        self.fetch(id).unwrap_or_else(|e| {
            self.seeded.table.db.backend().op_failed(format_args!("Diesel select by id {id:?} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.seeded.check_count()?;
        let rows = &self.seeded.rows;
        for i in self.seeded.sample() {
            let found = self.fetch(&rows.ids[i])?;
            let expected = (rows.names[i].clone(), rows.scores[i]);
            anyhow::ensure!(found.as_ref() == Some(&expected), "Diesel fetch of {:?} returned {found:?}", rows.ids[i]);
        }
        let absent = crate::ids::IdGenerator::new(self.seeded.table.kind(), 0)?.generate();
        anyhow::ensure!(self.fetch(&absent)?.is_none(), "an id never inserted was found");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.seeded.table.teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        self.seeded.table.tally(&[(crate::db::postgres::TableCount::Scans, crate::PerOp::Exactly(1))])
    }
}
