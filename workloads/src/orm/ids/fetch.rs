//! `orm/diesel_ids_select_by_id` (↔ `ids/select_by_id`) and `orm/diesel_ids_select_by_name`
//! (↔ `ids/select_by_name`): reads of a seeded table, each in a transaction.

use super::*;
use crate::ids::kinds::IdKind;
use crate::ids::{IdsCase, Seeded};
use crate::orm::DieselPool;
use crate::{Phase, Workload};
use diesel::prelude::*;

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

/// `orm/diesel_ids_select_by_id`.
pub struct DieselIdsSelectById {
    seeded: Seeded,
    diesel: DieselPool,
}

impl DieselIdsSelectById {
    /// Seeds the kind's table (raw driver, as the twin does) and opens the Diesel pool.
    pub fn create(case: &IdsCase) -> anyhow::Result<DieselIdsSelectById> {
        let seeded = Seeded::create(case)?;
        let diesel = diesel_pool_on(&seeded.table, case)?;
        Ok(DieselIdsSelectById { seeded, diesel })
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

/// One count in Diesel's words, in its transaction block.
macro_rules! count_in_tx {
    ($module:ident, $conn:expr, $name:expr) => {
        $conn.transaction::<i64, diesel::result::Error, _>(|c| {
            $module::t::table.filter($module::t::name.eq($name)).count().get_result(c)
        })
    };
}

/// The count of rows called `name` in `kind`'s table on a connection of either backend.
macro_rules! count_by_kind {
    ($conn:expr, $kind:expr, $name:expr, $uuid_v4:ident, $uuid_v7:ident) => {
        match $kind {
            IdKind::UuidV4 => count_in_tx!($uuid_v4, $conn, $name),
            IdKind::UuidV7 => count_in_tx!($uuid_v7, $conn, $name),
            IdKind::Snowflake => count_in_tx!(snowflake, $conn, $name),
            IdKind::Ulid => count_in_tx!(ulid, $conn, $name),
            IdKind::Base62UuidV7 => count_in_tx!(base62_uuid_v7, $conn, $name),
            IdKind::Ksuid => count_in_tx!(ksuid, $conn, $name),
            IdKind::KsuidMillis => count_in_tx!(ksuid_millis, $conn, $name),
        }
    };
}

/// `orm/diesel_ids_select_by_name`: `filter(name.eq(n)).count()` in a transaction (the name is
/// not indexed: a scan), beside `ids/select_by_name`.
pub struct DieselIdsSelectByName {
    seeded: Seeded,
    diesel: DieselPool,
}

impl DieselIdsSelectByName {
    /// Seeds the kind's table (raw driver, as the twin does) and opens the Diesel pool.
    pub fn create(case: &IdsCase) -> anyhow::Result<DieselIdsSelectByName> {
        let seeded = Seeded::create(case)?;
        let diesel = diesel_pool_on(&seeded.table, case)?;
        Ok(DieselIdsSelectByName { seeded, diesel })
    }

    /// One op as measured: the rows called `name`, counted in a transaction.
    pub fn count(&self, name: &str) -> anyhow::Result<i64> {
        let kind = self.seeded.table.kind();
        Ok(match &self.diesel {
            DieselPool::Sqlite(pool) => count_by_kind!(pool.get()?, kind, name, uuid_v4_blob, uuid_v7_blob)?,
            DieselPool::Postgres(pool) => count_by_kind!(pool.get()?, kind, name, uuid_v4_pg, uuid_v7_pg)?,
        })
    }
}

impl Workload for DieselIdsSelectByName {
    /// A server, or the scan of a table whose keys differ every run.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = usize;
    type Output = i64;
    fn local(&self, thread: usize) -> anyhow::Result<usize> {
        Ok(thread.wrapping_mul(7919) % self.seeded.rows.names.len().max(1))
    }
    fn op(&self, next: &mut usize) -> i64 {
        let names = &self.seeded.rows.names;
        let name = &names[*next];
        *next = if *next + 1 == names.len() { 0 } else { *next + 1 };
        self.count(name).unwrap_or_else(|e| {
            self.seeded.table.db.backend().op_failed(format_args!("Diesel count of {name} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.seeded.check_count()?;
        for i in self.seeded.sample() {
            let name = &self.seeded.rows.names[i];
            let n = self.count(name)?;
            anyhow::ensure!(n == 1, "Diesel counted {n} rows called {name}, expected 1");
        }
        let n = self.count("entity-absent")?;
        anyhow::ensure!(n == 0, "Diesel counted {n} rows with an absent name");
        Ok(())
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.seeded.table.teardown()
    }
    /// At least one scan per op (a parallel plan counts each worker's).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        self.diesel.flush_stats()?;
        self.seeded.table.tally(&[(crate::db::postgres::TableCount::Scans, crate::PerOp::AtLeast(1))])
    }
}
