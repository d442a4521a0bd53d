//! A two-tier near cache: a bounded local front (moka) over a back store behind a trait (an
//! in-process store, or Redis kept coherent by client tracking). A miss loads once even when
//! several readers miss the same key at once.

use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A boxed future, so that back stores can sit behind `dyn`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a near cache loads what its front does not hold.
pub trait BackStore<K, V>: Send + Sync + 'static {
    /// The value stored under `key`, if any.
    fn load<'a>(&'a self, key: &'a K) -> BoxFuture<'a, anyhow::Result<Option<V>>>;
}

/// Why a load put nothing in the front.
#[derive(Debug)]
enum Miss {
    Absent,
    Failed(anyhow::Error),
}

/// A bounded local front over a back store.
pub struct NearCache<K, V> {
    front: moka::future::Cache<K, V, super::FixedState>,
    back: Arc<dyn BackStore<K, V>>,
}

impl<K, V> NearCache<K, V>
where
    K: Hash + Eq + Clone + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    /// A near cache holding at most `capacity` entries locally.
    pub fn new(capacity: u64, back: Arc<dyn BackStore<K, V>>) -> NearCache<K, V> {
        let front =
            moka::future::Cache::builder().max_capacity(capacity).build_with_hasher(super::FixedState::default());
        NearCache { front, back }
    }

    /// The value of `key`: from the front when present, else loaded from the back store (one
    /// load for concurrent misses of the same key) and kept in the front.
    pub async fn get(&self, key: &K) -> anyhow::Result<Option<V>> {
        if let Some(v) = self.front.get(key).await {
            return Ok(Some(v));
        }
        let load = async {
            match self.back.load(key).await {
                Ok(Some(v)) => Ok(v),
                Ok(None) => Err(Miss::Absent),
                Err(e) => Err(Miss::Failed(e)),
            }
        };
        match self.front.try_get_with_by_ref(key, load).await {
            Ok(v) => Ok(Some(v)),
            Err(e) => match &*e {
                Miss::Absent => Ok(None),
                Miss::Failed(err) => Err(anyhow::anyhow!("{err:#}")),
            },
        }
    }

    /// One read as the near-cache workloads measure it: a front hit, or with `miss` the key
    /// dropped from the front first, so the read loads it from the back store.
    pub async fn read(&self, key: &K, miss: bool) -> anyhow::Result<Option<V>> {
        if miss {
            self.invalidate(key).await;
        }
        self.get(key).await
    }

    /// Drops `key` from the front; the next read loads it again.
    pub async fn invalidate(&self, key: &K) {
        self.front.invalidate(key).await;
    }

    /// The local front, for inspection.
    pub fn front(&self) -> &moka::future::Cache<K, V, super::FixedState> {
        &self.front
    }
}

/// An in-process back store that counts its loads.
pub struct InMemoryStore<K, V> {
    map: dashmap::DashMap<K, V>,
    loads: AtomicU64,
}

impl<K: Hash + Eq, V> InMemoryStore<K, V> {
    /// A store holding `entries`.
    pub fn new(entries: impl IntoIterator<Item = (K, V)>) -> InMemoryStore<K, V> {
        InMemoryStore { map: entries.into_iter().collect(), loads: AtomicU64::new(0) }
    }

    /// Loads served so far.
    pub fn loads(&self) -> u64 {
        self.loads.load(Ordering::Relaxed)
    }

    /// Replaces or adds a value (as another writer would).
    pub fn put(&self, key: K, value: V) {
        self.map.insert(key, value);
    }
}

impl<K, V> BackStore<K, V> for InMemoryStore<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    fn load<'a>(&'a self, key: &'a K) -> BoxFuture<'a, anyhow::Result<Option<V>>> {
        self.loads.fetch_add(1, Ordering::Relaxed);
        let v = self.map.get(key).map(|r| r.value().clone());
        Box::pin(std::future::ready(Ok(v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A store that takes a while to answer, so concurrent misses overlap.
    struct Slow(InMemoryStore<u64, u64>);
    impl BackStore<u64, u64> for Slow {
        fn load<'a>(&'a self, key: &'a u64) -> BoxFuture<'a, anyhow::Result<Option<u64>>> {
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.0.load(key).await
            })
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        crate::current_thread_runtime().unwrap()
    }

    #[test]
    fn read_through_loads_once_fills_the_front_and_invalidation_reloads() {
        runtime().block_on(async {
            let store = Arc::new(InMemoryStore::new([(1u64, 10u64), (2, 20)]));
            let near = NearCache::new(100, store.clone());
            assert_eq!(near.get(&1).await.unwrap(), Some(10));
            assert_eq!(near.get(&1).await.unwrap(), Some(10));
            assert_eq!(store.loads(), 1, "the second read is a front hit");
            assert_eq!(near.front().get(&1).await, Some(10));
            store.put(1, 11);
            assert_eq!(near.get(&1).await.unwrap(), Some(10), "stale until invalidated");
            near.invalidate(&1).await;
            assert_eq!(near.front().get(&1).await, None);
            assert_eq!(near.get(&1).await.unwrap(), Some(11));
            assert_eq!(store.loads(), 2);
            assert_eq!(near.get(&3).await.unwrap(), None, "absent keys are not cached");
            assert_eq!(near.front().get(&3).await, None);
        });
    }

    #[test]
    fn concurrent_misses_of_one_key_load_once() {
        runtime().block_on(async {
            let store = Arc::new(Slow(InMemoryStore::new([(7u64, 70u64)])));
            let near = Arc::new(NearCache::new(100, store.clone() as Arc<dyn BackStore<u64, u64>>));
            let readers: Vec<_> = (0..8)
                .map(|_| {
                    let near = Arc::clone(&near);
                    tokio::spawn(async move { near.get(&7).await.unwrap() })
                })
                .collect();
            for r in readers {
                assert_eq!(r.await.unwrap(), Some(70));
            }
            assert_eq!(store.0.loads(), 1);
        });
    }

    #[test]
    fn eviction_keeps_the_front_within_its_bound() {
        runtime().block_on(async {
            let store = Arc::new(InMemoryStore::new((0..1000u64).map(|k| (k, k))));
            let near = NearCache::new(100, store);
            for k in 0..1000 {
                near.get(&k).await.unwrap();
            }
            near.front().run_pending_tasks().await;
            assert!(near.front().entry_count() <= 100, "{} entries", near.front().entry_count());
        });
    }
}
