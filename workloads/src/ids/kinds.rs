//! The seven identifier kinds: generation, encoding, and how each is stored.

use std::fmt;
use std::sync::Mutex;
use svix_ksuid::KsuidLike;
use uuid::Uuid;

/// An identifier kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    /// Random UUID.
    UuidV4,
    /// Time-ordered UUIDv7 (ordered within the process, to the millisecond plus a counter).
    UuidV7,
    /// Monotonic ULID (ordered within the generator, to the millisecond plus increment).
    Ulid,
    /// UUIDv7 in Base62, fixed width 22, so lexical order is time order.
    Base62UuidV7,
    /// Snowflake i64: milliseconds, worker id, sequence.
    Snowflake,
    /// KSUID: seconds plus 128 random bits; ordered only across seconds.
    Ksuid,
    /// KSUID with millisecond timestamp (4 ms ticks); ordered only across ticks.
    KsuidMillis,
}

impl IdKind {
    /// Every kind, in listing order.
    pub const ALL: [IdKind; 7] = [
        IdKind::UuidV4,
        IdKind::UuidV7,
        IdKind::Ulid,
        IdKind::Base62UuidV7,
        IdKind::Snowflake,
        IdKind::Ksuid,
        IdKind::KsuidMillis,
    ];

    /// The `kind` param value.
    pub fn name(self) -> &'static str {
        match self {
            IdKind::UuidV4 => "uuid_v4",
            IdKind::UuidV7 => "uuid_v7",
            IdKind::Ulid => "ulid",
            IdKind::Base62UuidV7 => "base62_uuid_v7",
            IdKind::Snowflake => "snowflake",
            IdKind::Ksuid => "ksuid",
            IdKind::KsuidMillis => "ksuid_millis",
        }
    }

    /// The kind a `kind` param value names.
    pub fn from_name(name: &str) -> anyhow::Result<IdKind> {
        IdKind::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| anyhow::anyhow!("unknown id kind '{name}'"))
    }

    /// Length of the text form, for the kinds stored as text.
    pub fn text_width(self) -> Option<usize> {
        match self {
            IdKind::Ulid => Some(26),
            IdKind::Base62UuidV7 => Some(BASE62_WIDTH),
            IdKind::Ksuid | IdKind::KsuidMillis => Some(27),
            IdKind::UuidV4 | IdKind::UuidV7 | IdKind::Snowflake => None,
        }
    }

    /// Minimum spacing between two generations for their order to be guaranteed; `None` for
    /// random kinds, zero for kinds ordered by a counter within the process.
    pub fn order_resolution(self) -> Option<std::time::Duration> {
        use std::time::Duration;
        match self {
            IdKind::UuidV4 => None,
            IdKind::UuidV7 | IdKind::Ulid | IdKind::Base62UuidV7 | IdKind::Snowflake => Some(Duration::ZERO),
            IdKind::KsuidMillis => Some(Duration::from_millis(4)),
            IdKind::Ksuid => Some(Duration::from_secs(1)),
        }
    }
}

impl fmt::Display for IdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An identifier in the form it is stored in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IdValue {
    /// 16 bytes: native `uuid` on PostgreSQL, a 16-byte blob on SQLite.
    Uuid(Uuid),
    /// Text of the kind's fixed width.
    Text(String),
    /// A 64-bit integer.
    Int(i64),
}

impl IdValue {
    /// The bytes whose order is the stored order (big-endian for integers).
    pub fn sort_bytes(&self) -> Vec<u8> {
        match self {
            IdValue::Uuid(u) => u.as_bytes().to_vec(),
            IdValue::Text(s) => s.as_bytes().to_vec(),
            IdValue::Int(i) => (*i as u64 ^ (1 << 63)).to_be_bytes().to_vec(),
        }
    }
}

/// Width of a Base62-encoded 128-bit value: 62^22 > 2^128 > 62^21.
pub const BASE62_WIDTH: usize = 22;

/// Base62 (0-9, A-Z, a-z: ASCII order) of `n`, left-padded with '0' to 22 characters, so that
/// lexical order equals numeric order. The `base62` crate encodes; the padding is ours.
pub fn base62_fixed(n: u128) -> String {
    format!("{:0>width$}", base62::encode(n), width = BASE62_WIDTH)
}

/// Decodes a fixed-width Base62 id.
pub fn base62_decode(s: &str) -> anyhow::Result<u128> {
    anyhow::ensure!(s.len() == BASE62_WIDTH, "base62 id '{s}' is not {BASE62_WIDTH} characters");
    base62::decode(s).map_err(|e| anyhow::anyhow!("invalid base62 id '{s}': {e}"))
}

/// Generates ids of one kind; shared by every measuring thread of a fork.
pub struct IdGenerator {
    kind: IdKind,
    ulid: Mutex<ulid::Generator>,
    snowflake: snowflaked::sync::Generator,
}

impl IdGenerator {
    /// A generator for `kind`; `worker_id` (0..1024) goes into Snowflake ids.
    pub fn new(kind: IdKind, worker_id: u16) -> anyhow::Result<IdGenerator> {
        let snowflake = snowflaked::sync::Generator::new_checked(worker_id)
            .ok_or_else(|| anyhow::anyhow!("snowflake worker id {worker_id} is over 1023"))?;
        Ok(IdGenerator { kind, ulid: Mutex::new(ulid::Generator::new()), snowflake })
    }

    /// The kind.
    pub fn kind(&self) -> IdKind {
        self.kind
    }

    /// A fresh id in its stored form.
    pub fn generate(&self) -> IdValue {
        match self.kind {
            IdKind::UuidV4 => IdValue::Uuid(Uuid::new_v4()),
            IdKind::UuidV7 => IdValue::Uuid(Uuid::now_v7()),
            IdKind::Ulid => {
                let mut g = self.ulid.lock().expect("ulid generator lock");
                // Overflow needs 2^80 ids within one millisecond.
                IdValue::Text(g.generate().expect("ulid overflow within a millisecond").to_string())
            }
            IdKind::Base62UuidV7 => IdValue::Text(base62_fixed(Uuid::now_v7().as_u128())),
            IdKind::Snowflake => IdValue::Int(self.snowflake.generate::<i64>()),
            IdKind::Ksuid => IdValue::Text(svix_ksuid::Ksuid::now(None).to_string()),
            IdKind::KsuidMillis => IdValue::Text(svix_ksuid::KsuidMs::now(None).to_string()),
        }
    }

    /// Checks that `id` has this kind's form.
    pub fn check_form(&self, id: &IdValue) -> anyhow::Result<()> {
        match (self.kind, id) {
            (IdKind::UuidV4, IdValue::Uuid(u)) => anyhow::ensure!(u.get_version_num() == 4, "{u} is not a v4 UUID"),
            (IdKind::UuidV7, IdValue::Uuid(u)) => anyhow::ensure!(u.get_version_num() == 7, "{u} is not a v7 UUID"),
            (IdKind::Snowflake, IdValue::Int(i)) => anyhow::ensure!(*i > 0, "snowflake {i} is not positive"),
            (kind, IdValue::Text(s)) if kind.text_width() == Some(s.len()) => {
                let canonical = match kind {
                    IdKind::Ulid => s.parse::<ulid::Ulid>().map(|u| u.to_string()).map_err(|e| e.to_string()),
                    IdKind::Base62UuidV7 => base62_decode(s).map_err(|e| e.to_string()).and_then(|n| {
                        let u = Uuid::from_u128(n);
                        if u.get_version_num() == 7 { Ok(base62_fixed(n)) } else { Err("not a v7 UUID".into()) }
                    }),
                    IdKind::Ksuid => {
                        s.parse::<svix_ksuid::Ksuid>().map(|k| k.to_string()).map_err(|e| format!("{e:?}"))
                    }
                    _ => s.parse::<svix_ksuid::KsuidMs>().map(|k| k.to_string()).map_err(|e| format!("{e:?}")),
                }
                .map_err(|e| anyhow::anyhow!("invalid {kind} id {s}: {e}"))?;
                anyhow::ensure!(canonical == *s, "{kind} id {s} does not round-trip (reads back as {canonical})");
            }
            (kind, other) => anyhow::bail!("{other:?} is not a {kind} id"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base62_is_fixed_width_and_order_preserving() {
        assert_eq!(base62_fixed(0), "0000000000000000000000");
        assert_eq!(base62_fixed(u128::MAX).len(), 22);
        assert_eq!(base62_fixed(61), "000000000000000000000z");
        assert_eq!(base62_fixed(62), "0000000000000000000010");
        let mut values = [0u128, 1, 9, 10, 35, 36, 61, 62, 3843, 3844, 1 << 64, u128::MAX - 1, u128::MAX];
        values.sort_unstable();
        let encoded: Vec<String> = values.iter().map(|&v| base62_fixed(v)).collect();
        let mut sorted = encoded.clone();
        sorted.sort();
        assert_eq!(encoded, sorted, "lexical order differs from numeric order");
        for v in values {
            assert_eq!(base62_decode(&base62_fixed(v)).unwrap(), v);
        }
        assert!(base62_decode("short").is_err());
    }

    #[test]
    fn every_kind_generates_its_form() {
        for kind in IdKind::ALL {
            let g = IdGenerator::new(kind, 7).unwrap();
            for _ in 0..100 {
                let id = g.generate();
                g.check_form(&id).unwrap_or_else(|e| panic!("{kind}: {e}"));
            }
            assert_eq!(IdKind::from_name(kind.name()).unwrap(), kind);
        }
        assert!(IdGenerator::new(IdKind::Snowflake, 1024).is_err());
    }

    #[test]
    fn integer_sort_bytes_follow_signed_order() {
        let mut v = [IdValue::Int(-5), IdValue::Int(3), IdValue::Int(0), IdValue::Int(i64::MAX)];
        v.sort_by_key(IdValue::sort_bytes);
        assert_eq!(v, [IdValue::Int(-5), IdValue::Int(0), IdValue::Int(3), IdValue::Int(i64::MAX)]);
    }
}
