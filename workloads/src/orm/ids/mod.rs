//! The `ids` group's operations through Diesel's DSL, on the same table of each id kind as their
//! raw twins: fetch by key and count by name ([`fetch`]), batch and single-row inserts
//! ([`insert`]).
//!
//! Diesel's schema is static, so each kind's table is declared once per SQL type of its key:
//! UUIDs are `Binary` (a 16-byte blob) on SQLite and `Uuid` on PostgreSQL, Snowflake ids
//! `BigInt`, the text kinds `Varchar` on both.

mod fetch;
mod insert;

pub use fetch::{DieselIdsSelectById, DieselIdsSelectByName};
pub use insert::{DieselIdsBatchInsert, DieselIdsInsertGrowth};

use crate::ids::kinds::IdValue;
use crate::ids::{IdsCase, IdsDb};
use crate::orm::DieselPool;

/// The Diesel pool on a kind's table, made by the raw driver as its twin makes it; the table is
/// dropped again if the pool cannot open.
fn diesel_pool_on(table: &IdsDb, case: &IdsCase) -> anyhow::Result<DieselPool> {
    DieselPool::open_on(&table.db, &case.db.database_url, case.db.pool_size).inspect_err(|_| {
        let _ = table.teardown();
    })
}

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
