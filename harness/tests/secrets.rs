//! No password reaches stderr, stdout or the report, whatever shape its URL has: a property
//! test over generated passwords, given in every way a user gives a URL.

mod common;

use common::{harness, report_path};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// Characters a password is drawn from: letters and digits, every character reserved in a URL,
/// and a space.
const ALPHABET: &[u8] = b"abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789/#?@:&%+!$*()[]{}~^|;,= ";

fn password(rng: &mut Xoshiro256PlusPlus) -> String {
    let len = rng.random_range(10..=16);
    (0..len).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// `text` percent-encoded: every character but letters and digits.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// One way of giving a URL to `harness run`: (how, the arguments, the environment).
type Shape = (&'static str, Vec<String>, Vec<(&'static str, String)>);

/// Every way a password reaches the harness, for `pw` (raw) and `enc` (its encoding).
fn shapes(pw: &str, enc: &str) -> Vec<Shape> {
    let pg = |url: String| {
        ["-f", "sql/thread_select_by_id", "-p", "db=postgres", "-p", "row_count=1000", "--database-url"]
            .map(String::from)
            .into_iter()
            .chain([url])
            .collect::<Vec<_>>()
    };
    let redis = ["-f", "redis/redis_rs_get", "-p", "cache_size=1000"].map(String::from).to_vec();
    vec![
        ("userinfo, raw", pg(format!("postgres://bob:{pw}@127.0.0.1:1/test")), vec![]),
        ("userinfo, encoded", pg(format!("postgres://bob:{enc}@127.0.0.1:1/test")), vec![]),
        ("password= query", pg(format!("postgres://bob@127.0.0.1:1/test?sslmode=disable&password={enc}")), vec![]),
        ("password= raw", pg(format!("postgres://bob@127.0.0.1:1/test?password={pw}")), vec![]),
        (
            "DATABASE_URL",
            pg("postgres://bob@127.0.0.1:1/test".into())[..6].to_vec(),
            vec![("DATABASE_URL", format!("postgres://bob:{pw}@127.0.0.1:1/test"))],
        ),
        ("REDIS_URL", redis.clone(), vec![("REDIS_URL", format!("redis://:{pw}@127.0.0.1:1/0"))]),
        (
            "-p redis_url=",
            [redis, vec!["-p".into(), format!("redis_url=redis://u:{enc}@127.0.0.1:1")]].concat(),
            vec![],
        ),
    ]
}

#[test]
fn no_generated_password_reaches_stderr_stdout_or_the_report() {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(28);
    for _ in 0..3 {
        let pw = password(&mut rng);
        let enc = encoded(&pw);
        for (how, args, env) in shapes(&pw, &enc) {
            let (_dir, path) = report_path();
            let mut cmd = harness();
            cmd.env_remove("DATABASE_URL").env_remove("REDIS_URL").envs(env);
            let quick = ["--forks", "1", "--iterations", "1", "--time", "10ms", "--warmup-time", "10ms"];
            let out = cmd.arg("run").args(&args).args(quick).arg("--out").arg(&path).output().unwrap();
            let report = std::fs::read_to_string(&path).unwrap_or_default();
            let seen = [
                String::from_utf8_lossy(&out.stderr).into_owned(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                report,
            ];
            assert_ne!(out.status.code(), Some(0), "{how}: an unreachable server passed");
            for text in &seen {
                for secret in [&pw, &enc] {
                    assert!(!text.contains(secret.as_str()), "{how}: password {secret:?} leaked in:\n{text}");
                }
            }
        }
    }
}

#[test]
fn list_and_errors_hide_a_password_with_reserved_characters() {
    let pw = "p@ss/w#rd?x y";
    let out = harness()
        .args(["list", "-f", "redis/redis_rs_get", "--json", "-p"])
        .arg(format!("redis_url=redis://:{pw}@127.0.0.1:6379"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("w#rd") && !text.contains(pw), "{text}");
}
