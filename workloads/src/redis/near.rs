//! The near cache over Redis: a fred client in RESP3 mode with client tracking, whose
//! invalidation messages drop the local copy, so that a key changed by another connection is
//! reloaded on its next read.

use super::{RedisCase, delete_keys, fred_client, write_binary};
use crate::cache::near::BoxFuture;
use crate::cache::{BackStore, Entity, KeyCursor, NearCache};
use crate::{AsyncWorkload, Phase};
use fred::interfaces::{KeysInterface, TrackingInterface};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A Redis back store: keys `<prefix>near:<id>`, binary codec.
pub struct RedisStore {
    client: fred::clients::Client,
    key_prefix: String,
    /// Loads that went to Redis (near-cache misses).
    loads: AtomicU64,
}

impl RedisStore {
    /// The key of `id`.
    pub fn key(&self, id: u64) -> String {
        format!("{}{id}", self.key_prefix)
    }

    /// The id a key names, if it is one of this store's keys.
    pub fn id_of(&self, key: &str) -> Option<u64> {
        key.strip_prefix(&self.key_prefix)?.parse().ok()
    }
}

impl BackStore<u64, Arc<Entity>> for RedisStore {
    fn load<'a>(&'a self, id: &'a u64) -> BoxFuture<'a, anyhow::Result<Option<Arc<Entity>>>> {
        Box::pin(async move {
            self.loads.fetch_add(1, Ordering::Relaxed);
            let bytes: Option<bytes::Bytes> = self.client.get(self.key(*id)).await?;
            Ok(bytes.map(|b| Entity::from_binary(&b)).transpose()?.map(Arc::new))
        })
    }
}

/// `redis/near_hit` and `redis/near_miss`.
pub struct NearRedis {
    url: String,
    near: Arc<NearCache<u64, Arc<Entity>>>,
    store: Arc<RedisStore>,
    keys: Vec<String>,
    miss: bool,
    runtime: tokio::runtime::Runtime,
}

impl NearRedis {
    /// Writes the keys, starts tracking, wires invalidations to the front, loads every key once.
    pub fn create(case: &RedisCase, miss: bool) -> anyhow::Result<NearRedis> {
        let runtime = crate::current_thread_runtime()?;
        let keys = case.keys("near");
        let (near, store) = runtime.block_on(async {
            let client = fred_client(&case.url, true).await?;
            write_binary(&client, &keys).await?;
            // Default tracking mode: the server remembers the keys this connection read and
            // pushes an invalidation when any connection changes one of them.
            client.start_tracking(None, false, false, false, false).await?;
            let store =
                Arc::new(RedisStore { client, key_prefix: format!("{}near:", case.prefix), loads: AtomicU64::new(0) });
            let near = Arc::new(NearCache::new(case.cache_size, store.clone() as Arc<dyn BackStore<_, _>>));
            let mut invalidations = store.client.invalidation_rx();
            let (front, keys_of) = (near.front().clone(), Arc::clone(&store));
            tokio::spawn(async move {
                while let Ok(inv) = invalidations.recv().await {
                    for key in inv.keys {
                        if let Some(id) = key.as_str().and_then(|k| keys_of.id_of(k)) {
                            front.invalidate(&id).await;
                        }
                    }
                }
            });
            for id in 0..case.cache_size {
                near.get(&id).await?;
            }
            anyhow::Ok((near, store))
        })?;
        Ok(NearRedis { url: case.url.clone(), near, store, keys, miss, runtime })
    }

    /// The near cache.
    pub fn near(&self) -> &Arc<NearCache<u64, Arc<Entity>>> {
        &self.near
    }

    /// The store's key for `id`.
    pub fn key(&self, id: u64) -> String {
        self.store.key(id)
    }

    async fn read(&self, id: u64) -> anyhow::Result<Option<Arc<Entity>>> {
        self.near.read(&id, self.miss).await
    }
}

impl AsyncWorkload for NearRedis {
    /// Invalidations arrive from a server.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = KeyCursor;
    type Output = Option<Arc<Entity>>;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<KeyCursor> {
        Ok(KeyCursor::new(task, self.keys.len() as u64))
    }
    async fn op(&self, cursor: &mut KeyCursor) -> Option<Arc<Entity>> {
        let id = cursor.next_key();
        self.read(id).await.unwrap_or_else(|e| {
            crate::server_failed(crate::Server::Redis, format_args!("near cache get of {id} failed: {e:#}"))
        })
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.runtime.block_on(async {
            let step = (self.keys.len() / 200).max(1);
            for id in (0..self.keys.len() as u64).step_by(step) {
                let got = self.read(id).await?;
                anyhow::ensure!(got.as_deref() == Some(&Entity::new(id)), "near cache returned {got:?} for {id}");
            }
            Ok(())
        })
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.runtime.block_on(delete_keys(&self.store.client, &self.keys))
    }
    /// A hit loads nothing from Redis, a miss exactly one key (one GET).
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        let per_op = i64::from(self.miss);
        let loads = crate::Tally {
            name: "near_cache_loads".into(),
            value: self.store.loads.load(Ordering::Relaxed) as i64,
            per_op: crate::PerOp::Exactly(per_op),
            keeper: "the near cache",
        };
        let mut tallies = vec![loads];
        tallies.extend(super::server_tallies(&self.url, per_op)?);
        Ok(tallies)
    }
}
