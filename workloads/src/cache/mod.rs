//! In-process cache workloads: a moka hit, a near-cache hit, a read-through miss, and a plain
//! concurrent map lookup as the floor that shows what the cache layers cost.

pub mod near;

pub use near::{BackStore, InMemoryStore, NearCache};

use crate::params::{ParamKind, ParamSpec};
use crate::{AsyncWorkload, Phase, SetupContext, Workload, WorkloadDef, asynchronous, blocking};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// SipHash-1-3 with fixed keys: what `HashMap`'s `RandomState` computes, minus the per-process
/// random seed, so that hashing costs the same instructions in every run (the instruction
/// counts of the cache workloads stay exact run to run).
pub type FixedState = std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>;

/// A small cached entity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// Key.
    pub id: u64,
    /// `entity-{id}`.
    pub name: String,
    /// Position in the filled range.
    pub index: u64,
}

impl Entity {
    /// The entity stored under `id`.
    pub fn new(id: u64) -> Entity {
        Entity { id, name: format!("entity-{id}"), index: id }
    }

    /// JSON codec.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("entities serialize")
    }

    /// Decodes the JSON codec.
    pub fn from_json(bytes: &[u8]) -> anyhow::Result<Entity> {
        Ok(serde_json::from_slice(bytes)?)
    }

    /// Binary codec: id and index as little-endian u64, then the name's bytes.
    pub fn to_binary(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.name.len());
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.index.to_le_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out
    }

    /// Decodes the binary codec.
    pub fn from_binary(bytes: &[u8]) -> anyhow::Result<Entity> {
        anyhow::ensure!(bytes.len() >= 16, "binary entity of {} bytes is too short", bytes.len());
        let id = u64::from_le_bytes(bytes[..8].try_into()?);
        let index = u64::from_le_bytes(bytes[8..16].try_into()?);
        Ok(Entity { id, index, name: String::from_utf8(bytes[16..].to_vec())? })
    }
}

/// `cache_size`: entries filled (and the front's bound).
pub const CACHE_SIZE: ParamSpec = ParamSpec {
    name: "cache_size",
    about: "entries filled, and the local cache's bound",
    kind: ParamKind::Int { min: 1, max: 10_000_000 },
    defaults: &["1000", "10000"],
};

/// The cache group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new("cache/moka_hit", "get of a present key from a bounded moka cache", &[CACHE_SIZE], |ctx| {
        Ok(blocking(MokaHit::create(size(ctx)?)?))
    }),
    WorkloadDef::new("cache/near_hit", "get through a near cache, served by its moka front", &[CACHE_SIZE], |ctx| {
        Ok(asynchronous(NearLocal::create(size(ctx)?, false)?))
    }),
    WorkloadDef::new(
        "cache/read_through_miss",
        "invalidate the key in the front, then get: one load from the back store refills it",
        &[CACHE_SIZE],
        |ctx| Ok(asynchronous(NearLocal::create(size(ctx)?, true)?)),
    ),
    WorkloadDef::new(
        "cache/hashmap_hit",
        "get of a present key from a concurrent hash map (DashMap): the floor",
        &[CACHE_SIZE],
        |ctx| Ok(blocking(HashMapHit::create(size(ctx)?))),
    ),
];

fn size(ctx: &SetupContext) -> anyhow::Result<u64> {
    Ok(ctx.params.count("cache_size")? as u64)
}

/// Round-robin over `0..len`, starting at a per-thread offset.
#[derive(Debug, Clone, Copy)]
pub struct KeyCursor {
    next: u64,
    len: u64,
}

impl KeyCursor {
    /// Thread `thread`'s cursor over `len` keys.
    pub fn new(thread: usize, len: u64) -> KeyCursor {
        KeyCursor { next: (thread as u64).wrapping_mul(7919) % len.max(1), len: len.max(1) }
    }

    /// The next key.
    #[inline]
    pub fn next_key(&mut self) -> u64 {
        let k = self.next;
        self.next = if k + 1 == self.len { 0 } else { k + 1 };
        k
    }
}

/// `cache/moka_hit`.
pub struct MokaHit {
    cache: moka::sync::Cache<u64, Arc<Entity>, FixedState>,
    size: u64,
}

impl MokaHit {
    /// A cache bounded at `size`, filled with every key.
    pub fn create(size: u64) -> anyhow::Result<MokaHit> {
        let cache = moka::sync::Cache::builder().max_capacity(size).build_with_hasher(FixedState::default());
        for id in 0..size {
            cache.insert(id, Arc::new(Entity::new(id)));
        }
        cache.run_pending_tasks();
        Ok(MokaHit { cache, size })
    }
}

impl Workload for MokaHit {
    /// moka's sync cache also runs its housekeeping when 300 ms of wall time have passed since
    /// the last run, so whether a counted window pays one more run depends on how fast the ops
    /// went (under valgrind, on a loaded machine: 0.89 M or 0.93 M instructions for 100 ops).
    fn deterministic(&self) -> bool {
        false
    }
    type Local = KeyCursor;
    type Output = Option<Arc<Entity>>;
    fn local(&self, thread: usize) -> anyhow::Result<KeyCursor> {
        Ok(KeyCursor::new(thread, self.size))
    }
    fn op(&self, cursor: &mut KeyCursor) -> Option<Arc<Entity>> {
        self.cache.get(&cursor.next_key())
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        // Every key must still be present, or the workload would be measuring misses.
        let missing = (0..self.size).filter(|id| self.cache.get(id).as_deref() != Some(&Entity::new(*id))).count();
        anyhow::ensure!(missing == 0, "{missing} of {} keys are not in the cache", self.size);
        Ok(())
    }
}

/// `cache/hashmap_hit`.
pub struct HashMapHit {
    map: dashmap::DashMap<u64, Arc<Entity>, FixedState>,
    size: u64,
}

impl HashMapHit {
    /// A map holding every key.
    pub fn create(size: u64) -> HashMapHit {
        let map = dashmap::DashMap::with_hasher(FixedState::default());
        for id in 0..size {
            map.insert(id, Arc::new(Entity::new(id)));
        }
        HashMapHit { map, size }
    }
}

impl Workload for HashMapHit {
    type Local = KeyCursor;
    type Output = Option<Arc<Entity>>;
    fn local(&self, thread: usize) -> anyhow::Result<KeyCursor> {
        Ok(KeyCursor::new(thread, self.size))
    }
    fn op(&self, cursor: &mut KeyCursor) -> Option<Arc<Entity>> {
        self.map.get(&cursor.next_key()).map(|e| Arc::clone(e.value()))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        anyhow::ensure!(self.map.len() as u64 == self.size, "map holds {} entries", self.map.len());
        Ok(())
    }
}

/// `cache/near_hit` and `cache/read_through_miss`: a near cache over an in-process store.
pub struct NearLocal {
    near: NearCache<u64, Arc<Entity>>,
    store: Arc<InMemoryStore<u64, Arc<Entity>>>,
    size: u64,
    miss: bool,
    runtime: tokio::runtime::Runtime,
}

impl NearLocal {
    /// A store holding every key and a near cache with every key loaded into its front.
    pub fn create(size: u64, miss: bool) -> anyhow::Result<NearLocal> {
        let store = Arc::new(InMemoryStore::new((0..size).map(|id| (id, Arc::new(Entity::new(id))))));
        let near = NearCache::new(size, store.clone() as Arc<dyn BackStore<u64, Arc<Entity>>>);
        let runtime = crate::current_thread_runtime()?;
        runtime.block_on(async {
            for id in 0..size {
                near.get(&id).await?;
            }
            near.front().run_pending_tasks().await;
            anyhow::Ok(())
        })?;
        Ok(NearLocal { near, store, size, miss, runtime })
    }

    /// Loads the back store has served.
    pub fn loads(&self) -> u64 {
        self.store.loads()
    }

    async fn read(&self, key: u64) -> anyhow::Result<Option<Arc<Entity>>> {
        self.near.read(&key, self.miss).await
    }
}

impl AsyncWorkload for NearLocal {
    /// moka's future cache runs its housekeeping on its own schedule, so the instructions an
    /// op pays vary a little run to run.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = KeyCursor;
    type Output = Option<Arc<Entity>>;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<KeyCursor> {
        Ok(KeyCursor::new(task, self.size))
    }
    async fn op(&self, cursor: &mut KeyCursor) -> Option<Arc<Entity>> {
        let key = cursor.next_key();
        self.read(key).await.unwrap_or_else(|e| panic!("near cache get of {key} failed: {e:#}"))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.runtime.block_on(async {
            let before = self.loads();
            let step = (self.size / 200).max(1) as usize;
            let mut reads = 0;
            for id in (0..self.size).step_by(step) {
                let got = self.read(id).await?;
                anyhow::ensure!(got.as_deref() == Some(&Entity::new(id)), "near cache returned {got:?} for {id}");
                reads += 1;
            }
            // A hit never touches the store; a miss loads exactly once.
            let expected = if self.miss { reads } else { 0 };
            anyhow::ensure!(self.loads() - before == expected, "{} loads for {reads} reads", self.loads() - before);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codecs_round_trip_and_differ() {
        let e = Entity::new(42);
        assert_eq!(Entity::from_json(&e.to_json()).unwrap(), e);
        assert_eq!(Entity::from_binary(&e.to_binary()).unwrap(), e);
        assert_ne!(e.to_json(), e.to_binary());
        assert!(Entity::from_binary(&e.to_json()).is_err() || Entity::from_binary(&e.to_json()).unwrap() != e);
        assert!(Entity::from_json(&e.to_binary()).is_err());
    }

    #[test]
    fn every_local_workload_hits_and_checks() {
        let moka = MokaHit::create(500).unwrap();
        moka.verify(Phase::Before).unwrap();
        let mut c = moka.local(0).unwrap();
        assert!((0..1000).all(|_| moka.op(&mut c).is_some()));

        let map = HashMapHit::create(500);
        let mut c = map.local(1).unwrap();
        assert!((0..1000).all(|_| map.op(&mut c).is_some()));

        let hit = NearLocal::create(300, false).unwrap();
        let loads = hit.loads();
        assert_eq!(loads, 300, "filling loads every key once");
        hit.verify(Phase::Before).unwrap();
        let mut c = hit.local(0).unwrap();
        hit.runtime().block_on(async {
            for _ in 0..600 {
                assert!(hit.op(&mut c).await.is_some());
            }
        });
        assert_eq!(hit.loads(), loads, "hits never load");

        let miss = NearLocal::create(300, true).unwrap();
        miss.verify(Phase::Before).unwrap();
        let before = miss.loads();
        let mut c = miss.local(0).unwrap();
        miss.runtime().block_on(async {
            for _ in 0..50 {
                assert!(miss.op(&mut c).await.is_some());
            }
        });
        assert_eq!(miss.loads() - before, 50, "every read-through miss loads once");
    }

    #[test]
    fn key_cursor_wraps() {
        let mut c = KeyCursor::new(0, 3);
        let keys: Vec<u64> = (0..7).map(|_| c.next_key()).collect();
        assert_eq!(keys, [0, 1, 2, 0, 1, 2, 0]);
    }
}
