//! `orm/diesel_ids_batch_insert` (↔ `ids/batch_insert`) and `orm/diesel_ids_insert_growth`
//! (↔ `ids/insert_growth`): inserts of fresh keys.

use super::*;
use crate::ids::kinds::IdKind;
use crate::ids::{IdGenerator, IdsCase, IdsDb, Rows};
use crate::orm::DieselPool;
use crate::{Phase, Workload};
use diesel::prelude::*;

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
        let ids = case.generator()?;
        let table = IdsDb::create(&case.db, case.kind)?;
        let diesel = diesel_pool_on(&table, case)?;
        Ok(DieselIdsBatchInsert { table, ids, row_count: case.row_count, diesel })
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

impl crate::ids::BatchInserts for DieselIdsBatchInsert {
    const OP: &'static str = "Diesel batch insert";
    fn table(&self) -> &IdsDb {
        &self.table
    }
    fn row_count(&self) -> usize {
        self.row_count
    }
    fn insert_batch(&self) -> anyhow::Result<i64> {
        DieselIdsBatchInsert::insert_batch(self)
    }
    fn batch_tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        let rows = crate::PerOp::Exactly(self.row_count as i64);
        self.table.tally(&[(crate::db::postgres::TableCount::RowsInserted, rows)])
    }
}

/// One row in Diesel's words, autocommit.
macro_rules! insert_one {
    ($module:ident, $conn:expr, $id:expr, $name:expr, $score:expr, $key:expr) => {
        diesel::insert_into($module::t::table)
            .values(($module::t::id.eq($key($id)), $module::t::name.eq($name), $module::t::score.eq($score)))
            .execute(&mut $conn)
    };
}

/// The single-row insert into `kind`'s table on a connection of either backend.
macro_rules! insert_one_by_kind {
    ($conn:expr, $kind:expr, $id:expr, $name:expr, $score:expr, $uuid_v4:ident, $uuid_v7:ident, $uuid:expr) => {
        match $kind {
            IdKind::UuidV4 => insert_one!($uuid_v4, $conn, $id, $name, $score, $uuid),
            IdKind::UuidV7 => insert_one!($uuid_v7, $conn, $id, $name, $score, $uuid),
            IdKind::Snowflake => insert_one!(snowflake, $conn, $id, $name, $score, int),
            IdKind::Ulid => insert_one!(ulid, $conn, $id, $name, $score, text),
            IdKind::Base62UuidV7 => insert_one!(base62_uuid_v7, $conn, $id, $name, $score, text),
            IdKind::Ksuid => insert_one!(ksuid, $conn, $id, $name, $score, text),
            IdKind::KsuidMillis => insert_one!(ksuid_millis, $conn, $id, $name, $score, text),
        }
    };
}

/// `orm/diesel_ids_insert_growth`: one row per op through Diesel's `insert_into(…).values(…)`,
/// autocommit, into a table that grows through the fork (`table_rows` recorded), beside
/// `ids/insert_growth`.
pub struct DieselIdsInsertGrowth {
    table: IdsDb,
    ids: IdGenerator,
    rows: std::sync::atomic::AtomicI64,
    diesel: DieselPool,
}

impl DieselIdsInsertGrowth {
    /// Creates the kind's empty table (raw driver, as the twin does) and opens the Diesel pool.
    pub fn create(case: &IdsCase) -> anyhow::Result<DieselIdsInsertGrowth> {
        let ids = case.generator()?;
        let table = IdsDb::create(&case.db, case.kind)?;
        let diesel = diesel_pool_on(&table, case)?;
        Ok(DieselIdsInsertGrowth { table, ids, rows: std::sync::atomic::AtomicI64::new(0), diesel })
    }

    /// One op as measured: a fresh id, one row.
    pub fn insert(&self) -> anyhow::Result<()> {
        let seq = self.rows.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = self.ids.generate();
        let (name, score) = (format!("entity-{seq}"), (seq % 100) as i32);
        let kind = self.table.kind();
        match &self.diesel {
            DieselPool::Sqlite(pool) => {
                insert_one_by_kind!(pool.get()?, kind, &id, &name, score, uuid_v4_blob, uuid_v7_blob, blob)?
            }
            DieselPool::Postgres(pool) => {
                insert_one_by_kind!(pool.get()?, kind, &id, &name, score, uuid_v4_pg, uuid_v7_pg, uuid)?
            }
        };
        Ok(())
    }
}

impl Workload for DieselIdsInsertGrowth {
    /// Every op inserts into a different, growing table.
    fn deterministic(&self) -> bool {
        false
    }
    crate::workload::no_local_state!();
    type Output = ();
    fn op(&self, _: &mut ()) {
        self.insert()
            .unwrap_or_else(|e| self.table.db.backend().op_failed(format_args!("Diesel insert failed: {e:#}")));
    }
    fn observe(&self) -> anyhow::Result<Vec<(&'static str, i64)>> {
        Ok(vec![("table_rows", self.rows.load(std::sync::atomic::Ordering::Relaxed))])
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        let (counted, inserted) = (self.table.count()?, self.rows.load(std::sync::atomic::Ordering::Relaxed));
        anyhow::ensure!(counted == inserted, "table holds {counted} rows after {inserted} Diesel inserts");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.table.teardown()
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        self.table.tally(&[(crate::db::postgres::TableCount::RowsInserted, crate::PerOp::Exactly(1))])
    }
}
