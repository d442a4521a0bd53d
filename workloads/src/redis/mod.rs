//! Redis workloads: gets through two independent clients (`redis` and `fred`), each writing its
//! own keys under its own prefix and codec, and a near cache over Redis kept coherent by
//! server-assisted invalidation (RESP3 client tracking).
//!
//! Every client runs on a current-thread runtime that the worker enters once per batch, so the
//! clients' connection tasks run on the measuring thread: no cross-thread wake-up per get.

mod near;

pub use near::{NearRedis, RedisStore};

use crate::cache::{CACHE_SIZE, Entity, KeyCursor};
use crate::params::{ParamKind, ParamSpec};
use crate::redact::redact;
use crate::{AsyncWorkload, Phase, Server, SetupContext, WorkloadDef, asynchronous};
use fred::interfaces::{ClientLike, KeysInterface};
use redis::AsyncCommands;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Default Redis URL (`--redis-url`, `REDIS_URL`).
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";

/// `redis_url`: the server; defaults to the run's `--redis-url` / `REDIS_URL`.
pub const REDIS_URL: ParamSpec = ParamSpec {
    name: "redis_url",
    about: "Redis server (default: --redis-url or REDIS_URL)",
    kind: ParamKind::Text,
    defaults: &["$redis_url"],
};

/// How long connecting may take before the case fails.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// The params of the Redis GET workloads.
pub(crate) const PARAMS: &[ParamSpec] = &[CACHE_SIZE, REDIS_URL];

/// The redis group.
pub static WORKLOADS: &[WorkloadDef] = &[
    WorkloadDef::new(
        "redis/redis_rs_get",
        "GET of a present key through the redis crate (async multiplexed connection), JSON codec",
        PARAMS,
        |ctx| Ok(asynchronous(RedisRsGet::create(&RedisCase::from(ctx)?)?)),
    )
    .served_by(servers),
    WorkloadDef::new("redis/fred_get", "GET of a present key through the fred crate, binary codec", PARAMS, |ctx| {
        Ok(asynchronous(FredGet::create(&RedisCase::from(ctx)?)?))
    })
    .served_by(servers),
    WorkloadDef::new(
        "redis/near_hit",
        "get through a near cache over Redis (RESP3 tracking), served by its local front",
        PARAMS,
        |ctx| Ok(asynchronous(NearRedis::create(&RedisCase::from(ctx)?, false)?)),
    )
    .served_by(servers)
    .floor(crate::def::OpFloor::None),
    WorkloadDef::new(
        "redis/near_miss",
        "invalidate the key in the near cache's front, then get: one GET from Redis refills it",
        PARAMS,
        |ctx| Ok(asynchronous(NearRedis::create(&RedisCase::from(ctx)?, true)?)),
    )
    .served_by(servers),
];

/// The Redis server a case needs.
pub fn servers(ctx: &SetupContext) -> Vec<(crate::def::Server, String)> {
    ctx.params.get("redis_url").map(|url| vec![(crate::def::Server::Redis, url.to_string())]).unwrap_or_default()
}

/// A Redis case's settings.
#[derive(Debug, Clone)]
pub struct RedisCase {
    /// Server URL (may hold a password: redact before printing).
    pub url: String,
    /// Keys written per client.
    pub cache_size: u64,
    /// Key prefix unique to this fork: `harness:<pid>:<nanos>:`.
    pub prefix: String,
}

impl RedisCase {
    /// Reads a case's params.
    pub fn from(ctx: &SetupContext) -> anyhow::Result<RedisCase> {
        Ok(RedisCase::new(ctx.params.get("redis_url")?, ctx.params.count("cache_size")? as u64))
    }

    /// A case on `url` with a fresh key prefix.
    pub fn new(url: &str, cache_size: u64) -> RedisCase {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        RedisCase { url: url.to_string(), cache_size, prefix: format!("harness:{}:{nanos}:", std::process::id()) }
    }

    /// The keys of one client, `<prefix><client>:<id>` for ids `0..cache_size`.
    pub fn keys(&self, client: &str) -> Vec<String> {
        (0..self.cache_size).map(|id| format!("{}{client}:{id}", self.prefix)).collect()
    }
}

/// One clear line for a server that cannot be reached.
pub fn unreachable(url: &str, e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!(
        "cannot connect to Redis at {}: {}; start Redis or pass --redis-url (or REDIS_URL)",
        redact(url),
        redact(&e.to_string())
    )
}

/// A fred client for `url` (RESP3 when `resp3`), connected, with bounded connect time and no
/// reconnect policy, so an unreachable server fails the setup at once.
pub async fn fred_client(url: &str, resp3: bool) -> anyhow::Result<fred::clients::Client> {
    let mut config = fred::types::config::Config::from_url(url)
        .map_err(|e| anyhow::anyhow!("invalid Redis URL {}: {e}; pass --redis-url redis://HOST:PORT", redact(url)))?;
    if resp3 {
        config.version = fred::types::RespVersion::RESP3;
    }
    let client = fred::types::Builder::from_config(config)
        .with_connection_config(|c| {
            c.connection_timeout = CONNECT_TIMEOUT;
            c.max_command_attempts = 1;
        })
        .build()
        .map_err(|e| unreachable(url, e))?;
    client.init().await.map_err(|e| unreachable(url, e))?;
    Ok(client)
}

/// `redis/redis_rs_get`.
pub struct RedisRsGet {
    url: String,
    conn: redis::aio::MultiplexedConnection,
    keys: Vec<String>,
    runtime: tokio::runtime::Runtime,
}

impl RedisRsGet {
    /// Connects and writes `cache_size` keys (JSON codec) under the fork's `rr:` prefix.
    pub fn create(case: &RedisCase) -> anyhow::Result<RedisRsGet> {
        let runtime = crate::current_thread_runtime()?;
        let keys = case.keys("rr");
        let conn = runtime.block_on(async {
            let client = redis::Client::open(case.url.as_str()).map_err(|e| unreachable(&case.url, e))?;
            // No per-request response timer (redis-rs arms a 500 ms one by default): the harness
            // enforces its own fork timeout, and the timer costs work on every get.
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(CONNECT_TIMEOUT))
                .set_response_timeout(None);
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| unreachable(&case.url, e))?;
            for (chunk_start, chunk) in keys.chunks(1000).enumerate() {
                let mut pipe = redis::pipe();
                for (i, key) in chunk.iter().enumerate() {
                    pipe.set(key, Entity::new((chunk_start * 1000 + i) as u64).to_json()).ignore();
                }
                let () = pipe.query_async(&mut conn).await?;
            }
            anyhow::Ok(conn)
        })?;
        Ok(RedisRsGet { url: case.url.clone(), conn, keys, runtime })
    }

    /// One get as the op runs it, on a handle of the multiplexed connection.
    pub async fn get_on(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> anyhow::Result<Option<Entity>> {
        let bytes: Option<Vec<u8>> = conn.get(key).await?;
        bytes.map(|b| Entity::from_json(&b)).transpose()
    }

    /// One get on a fresh handle.
    pub async fn get(&self, key: &str) -> anyhow::Result<Option<Entity>> {
        RedisRsGet::get_on(&mut self.conn.clone(), key).await
    }
}

impl AsyncWorkload for RedisRsGet {
    /// Talks to a server.
    fn deterministic(&self) -> bool {
        false
    }
    /// A key cursor and this task's handle on the multiplexed connection.
    type Local = (KeyCursor, redis::aio::MultiplexedConnection);
    type Output = Option<Entity>;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<Self::Local> {
        Ok((KeyCursor::new(task, self.keys.len() as u64), self.conn.clone()))
    }
    async fn op(&self, (cursor, conn): &mut Self::Local) -> Option<Entity> {
        let key = &self.keys[cursor.next_key() as usize];
        RedisRsGet::get_on(conn, key)
            .await
            .unwrap_or_else(|e| crate::server_failed(Server::Redis, format_args!("GET {key} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.runtime.block_on(check_gets(&self.keys, |key| self.get(key)))
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        server_tallies(&self.url, 1)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.runtime.block_on(async {
            let mut conn = self.conn.clone();
            for chunk in self.keys.chunks(1000) {
                let _: () = conn.del(chunk).await?;
            }
            anyhow::Ok(())
        })
    }
}

/// `redis/fred_get`.
pub struct FredGet {
    url: String,
    client: fred::clients::Client,
    keys: Vec<String>,
    runtime: tokio::runtime::Runtime,
}

impl FredGet {
    /// Connects and writes `cache_size` keys (binary codec) under the fork's `fred:` prefix.
    pub fn create(case: &RedisCase) -> anyhow::Result<FredGet> {
        let runtime = crate::current_thread_runtime()?;
        let keys = case.keys("fred");
        let client = runtime.block_on(async {
            let client = fred_client(&case.url, false).await?;
            write_binary(&client, &keys).await?;
            anyhow::Ok(client)
        })?;
        Ok(FredGet { url: case.url.clone(), client, keys, runtime })
    }

    /// One get as the op runs it.
    pub async fn get(&self, key: &str) -> anyhow::Result<Option<Entity>> {
        let bytes: Option<bytes::Bytes> = self.client.get(key).await?;
        bytes.map(|b| Entity::from_binary(&b)).transpose()
    }
}

/// Writes `Entity::new(i)` in the binary codec under `keys[i]`, 1000 keys per MSET.
pub async fn write_binary(client: &fred::clients::Client, keys: &[String]) -> anyhow::Result<()> {
    for (chunk_start, chunk) in keys.chunks(1000).enumerate() {
        let pairs: Vec<(String, Vec<u8>)> = chunk
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), Entity::new((chunk_start * 1000 + i) as u64).to_binary()))
            .collect();
        let () = client.mset(pairs).await?;
    }
    Ok(())
}

/// Deletes `keys`, 1000 per DEL.
pub async fn delete_keys(client: &fred::clients::Client, keys: &[String]) -> anyhow::Result<()> {
    for chunk in keys.chunks(1000) {
        let _: i64 = client.del(chunk.to_vec()).await?;
    }
    Ok(())
}

impl AsyncWorkload for FredGet {
    /// Talks to a server.
    fn deterministic(&self) -> bool {
        false
    }
    type Local = KeyCursor;
    type Output = Option<Entity>;
    fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }
    fn local(&self, task: usize) -> anyhow::Result<KeyCursor> {
        Ok(KeyCursor::new(task, self.keys.len() as u64))
    }
    async fn op(&self, cursor: &mut KeyCursor) -> Option<Entity> {
        let key = &self.keys[cursor.next_key() as usize];
        self.get(key)
            .await
            .unwrap_or_else(|e| crate::server_failed(Server::Redis, format_args!("GET {key} failed: {e:#}")))
    }
    fn verify(&self, _: Phase) -> anyhow::Result<()> {
        self.runtime.block_on(check_gets(&self.keys, |key| self.get(key)))
    }
    fn tally(&self) -> anyhow::Result<Vec<crate::Tally>> {
        server_tallies(&self.url, 1)
    }
    fn teardown(&self) -> anyhow::Result<()> {
        self.runtime.block_on(delete_keys(&self.client, &self.keys))
    }
}

/// Redis's `INFO commandstats` (the server's, so other clients add to it too), read on a
/// connection of its own.
fn command_stats(url: &str) -> anyhow::Result<String> {
    let client = redis::Client::open(url).map_err(|e| unreachable(url, e))?;
    let mut conn = client.get_connection_with_timeout(CONNECT_TIMEOUT).map_err(|e| unreachable(url, e))?;
    Ok(redis::cmd("INFO").arg("commandstats").query(&mut conn)?)
}

/// The `calls=` of `cmdstat_<command>` in `INFO commandstats` output (0 if never called).
fn calls_of(stats: &str, command: &str) -> i64 {
    every_command(stats).find_map(|(c, n)| (c == command).then_some(n)).unwrap_or(0)
}

/// Every command of `INFO commandstats` output with its `calls=`.
fn every_command(stats: &str) -> impl Iterator<Item = (&str, i64)> {
    stats.lines().filter_map(|l| {
        let (command, fields) = l.strip_prefix("cmdstat_")?.split_once(':')?;
        let calls = fields.split(',').find_map(|f| f.strip_prefix("calls="))?.trim().parse().ok()?;
        Some((command, calls))
    })
}

/// The server's counts of a Redis case: its GET calls, at least `per_op` per op (checked), and
/// every command's calls as `redis_calls_<command>` (recorded, never checked: server-wide).
pub fn server_tallies(url: &str, per_op: i64) -> anyhow::Result<Vec<crate::Tally>> {
    let stats = command_stats(url)?;
    let mut tallies = vec![crate::Tally {
        name: "redis_get_calls".into(),
        value: calls_of(&stats, "get"),
        per_op: crate::PerOp::AtLeast(per_op),
        keeper: "Redis's INFO commandstats",
    }];
    tallies.extend(every_command(&stats).map(|(command, calls)| crate::Tally {
        name: format!("redis_calls_{command}").into(),
        value: calls,
        per_op: crate::PerOp::Recorded,
        keeper: "Redis's INFO commandstats (server-wide)",
    }));
    Ok(tallies)
}

/// Each sampled key reads back exactly the entity written under it; an absent key reads nothing.
async fn check_gets<'a, F, Fut>(keys: &'a [String], get: F) -> anyhow::Result<()>
where
    F: Fn(&'a str) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<Entity>>>,
{
    let step = (keys.len() / 200).max(1);
    for (id, key) in keys.iter().enumerate().step_by(step) {
        let got = get(key).await?;
        anyhow::ensure!(got == Some(Entity::new(id as u64)), "{key} read back {got:?}");
    }
    let absent = "harness:absent-key";
    anyhow::ensure!(get(absent).await?.is_none(), "{absent} exists");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_are_read_from_commandstats() {
        let stats = "# Commandstats\r\ncmdstat_getex:calls=7,usec=1\r\ncmdstat_get:calls=12345,usec=99,usec_per_call=0.01,rejected_calls=0,failed_calls=0\r\n";
        assert_eq!(super::calls_of(stats, "get"), 12345);
        assert_eq!(super::calls_of(stats, "set"), 0);
        let every: Vec<_> = super::every_command(stats).collect();
        assert_eq!(every, [("getex", 7), ("get", 12345)]);
    }
}
