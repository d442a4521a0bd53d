//! `orm/diesel_ids_select_by_id`: the `ids` group's fetch by primary key through Diesel's DSL
//! and transaction, on the same seeded table of each id kind as its raw twin `ids/select_by_id`.
//!
//! Diesel's schema is static, so each kind's table is declared once per SQL type of its key:
//! UUIDs are `Binary` (a 16-byte blob) on SQLite and `Uuid` on PostgreSQL, Snowflake ids
//! `BigInt`, the text kinds `Varchar` on both.

use super::DieselPool;
use crate::ids::kinds::{IdKind, IdValue};
use crate::ids::{IdsCase, Seeded};
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
