//! The counting relay of I/O forks (`--io`): a TCP relay on loopback between a worker and one
//! server (PostgreSQL or Redis), run by the parent, that reads the protocol as it passes and
//! counts round trips, bytes each way, messages by type and statements by text.
//!
//! A *round trip* is a flight: the client speaks, then the server answers. Everything is
//! counted when it is read, before it is passed on, so an op that has returned has been counted
//! whole. A message nobody waits for (a lazy Close, a Terminate) is counted when it arrives.

mod postgres;
mod resp;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long the relay waits for the server to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the accepting thread looks whether the relay was dropped.
const ACCEPT_POLL: Duration = Duration::from_millis(20);

/// What a relay counted, summed over its connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Flights: the client spoke and the server answered.
    pub round_trips: u64,
    /// Bytes from the client to the server (what the relay answered itself excluded).
    pub bytes_to_server: u64,
    /// Bytes from the server to the client.
    pub bytes_to_client: u64,
    /// Client messages by type (PostgreSQL `Parse`, `Bind`…) or Redis commands by name.
    pub messages: BTreeMap<String, u64>,
    /// Statements executed, by normalised text: PostgreSQL's Executes and simple Queries, Redis's
    /// commands by name.
    pub statements: BTreeMap<String, u64>,
    /// PostgreSQL: rows the server sent (`DataRow` messages).
    pub rows: u64,
    /// Connections the client opened.
    pub connections: u64,
    /// Connections whose requests could not be read (only their bytes and flights counted).
    pub unreadable_connections: u64,
}

impl Tally {
    /// What was counted after `before` was taken.
    pub fn since(&self, before: &Tally) -> Tally {
        let map = |now: &BTreeMap<String, u64>, then: &BTreeMap<String, u64>| {
            now.iter()
                .map(|(k, v)| (k.clone(), v - then.get(k).copied().unwrap_or(0)))
                .filter(|(_, v)| *v > 0)
                .collect()
        };
        Tally {
            round_trips: self.round_trips - before.round_trips,
            bytes_to_server: self.bytes_to_server - before.bytes_to_server,
            bytes_to_client: self.bytes_to_client - before.bytes_to_client,
            messages: map(&self.messages, &before.messages),
            statements: map(&self.statements, &before.statements),
            rows: self.rows - before.rows,
            connections: self.connections - before.connections,
            unreadable_connections: self.unreadable_connections - before.unreadable_connections,
        }
    }

    /// Adds `other` to this tally.
    pub fn add(&mut self, other: &Tally) {
        self.round_trips += other.round_trips;
        self.bytes_to_server += other.bytes_to_server;
        self.bytes_to_client += other.bytes_to_client;
        for (k, v) in &other.messages {
            *self.messages.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.statements {
            *self.statements.entry(k.clone()).or_default() += v;
        }
        self.rows += other.rows;
        self.connections += other.connections;
        self.unreadable_connections += other.unreadable_connections;
    }
}

/// The protocol a relay reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// PostgreSQL's frontend/backend protocol 3.
    Postgres,
    /// Redis's RESP.
    Resp,
}

/// A running relay; dropping it closes the listener and every relayed connection.
#[derive(Debug)]
pub struct Relay {
    /// Where clients connect instead of the server.
    pub addr: SocketAddr,
    tally: Arc<Mutex<Tally>>,
    closed: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// Starts relaying from a fresh loopback port to `upstream`, reading `protocol`.
    pub fn start(upstream: SocketAddr, protocol: Protocol) -> std::io::Result<Relay> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let relay = Relay {
            addr: listener.local_addr()?,
            tally: Arc::default(),
            closed: Arc::default(),
            streams: Arc::default(),
        };
        let (tally, closed, streams) = (relay.tally.clone(), relay.closed.clone(), relay.streams.clone());
        std::thread::spawn(move || {
            while !closed.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let _ = client.set_nonblocking(false);
                        if let Ok(server) = TcpStream::connect_timeout(&upstream, CONNECT_TIMEOUT) {
                            relay_connection(client, server, protocol, &tally, &streams);
                        }
                    }
                    Err(_) => std::thread::sleep(ACCEPT_POLL),
                }
            }
        });
        Ok(relay)
    }

    /// Everything counted so far.
    pub fn tally(&self) -> Tally {
        self.tally.lock().expect("tally lock").clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::SeqCst);
        for s in self.streams.lock().expect("streams lock").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Starts the two pumps of one connection.
fn relay_connection(
    client: TcpStream,
    server: TcpStream,
    protocol: Protocol,
    tally: &Arc<Mutex<Tally>>,
    streams: &Arc<Mutex<Vec<TcpStream>>>,
) {
    // Without NODELAY, Nagle's algorithm on the relay's side and the peer's delayed ACK hold
    // each small write of a pipelining client for up to 200 ms.
    if client.set_nodelay(true).and(server.set_nodelay(true)).is_err() {
        return;
    }
    let clone = |s: &TcpStream| s.try_clone();
    let (Ok(answer_c), Ok(answer_s), Ok(to_client), Ok(keep_c), Ok(keep_s)) =
        (clone(&client), clone(&server), clone(&client), clone(&client), clone(&server))
    else {
        return;
    };
    streams.lock().expect("streams lock").extend([keep_c, keep_s]);
    tally.lock().expect("tally lock").connections += 1;
    let spoke = Arc::new(AtomicBool::new(false));
    let (t, s) = (tally.clone(), spoke.clone());
    std::thread::spawn(move || pump_requests(client, server, answer_c, protocol, &t, &s));
    let (t, s) = (tally.clone(), spoke);
    std::thread::spawn(move || pump_answers(answer_s, to_client, protocol, &t, &s));
}

/// Client to server: counts each complete request, then passes it on (or answers it).
fn pump_requests(
    mut client: TcpStream,
    mut server: TcpStream,
    mut answer: TcpStream,
    protocol: Protocol,
    tally: &Mutex<Tally>,
    spoke: &AtomicBool,
) {
    let (mut frontend, mut requests, mut pending) = (postgres::Frontend::default(), resp::Requests::default(), vec![]);
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = client.read(&mut buf) {
        let relayed = {
            let mut t = tally.lock().expect("tally lock");
            let relayed = match protocol {
                Protocol::Postgres => {
                    pending.extend_from_slice(&buf[..n]);
                    frontend.read(&mut pending, &mut t)
                }
                Protocol::Resp => {
                    requests.read(&buf[..n], &mut t);
                    postgres::Relayed { to_server: buf[..n].to_vec(), to_client: vec![] }
                }
            };
            t.bytes_to_server += relayed.to_server.len() as u64;
            if !relayed.to_server.is_empty() {
                spoke.store(true, Ordering::SeqCst);
            }
            relayed
        };
        if answer.write_all(&relayed.to_client).is_err() || server.write_all(&relayed.to_server).is_err() {
            break;
        }
    }
    let _ = server.shutdown(Shutdown::Write);
}

/// Server to client: counts a flight when an answer follows the client's words, and the rows
/// it carries, then passes the bytes on.
fn pump_answers(
    mut server: TcpStream,
    mut client: TcpStream,
    protocol: Protocol,
    tally: &Mutex<Tally>,
    spoke: &AtomicBool,
) {
    let mut backend = postgres::Backend::default();
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = server.read(&mut buf) {
        {
            let mut t = tally.lock().expect("tally lock");
            t.bytes_to_client += n as u64;
            if spoke.swap(false, Ordering::SeqCst) {
                t.round_trips += 1;
            }
            if protocol == Protocol::Postgres {
                backend.read(&buf[..n], &mut t);
            }
        }
        if client.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = client.shutdown(Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_flight_is_counted_before_its_answer_arrives() {
        // A server that answers every read with the same bytes.
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let upstream = server.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut s in server.incoming().flatten() {
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = s.read(&mut buf) {
                    s.write_all(&buf[..n]).unwrap();
                }
            }
        });
        let relay = Relay::start(upstream, Protocol::Resp).unwrap();
        let mut c = TcpStream::connect(relay.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for _ in 0..3 {
            c.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
            let mut answer = [0u8; 14];
            c.read_exact(&mut answer).unwrap();
        }
        let t = relay.tally();
        assert_eq!((t.round_trips, t.bytes_to_server, t.bytes_to_client, t.connections), (3, 42, 42, 1));
        assert_eq!(t.messages.get("PING"), Some(&3));
        let later = t.since(&Tally { round_trips: 1, ..Tally::default() });
        assert_eq!(later.round_trips, 2);
    }
}
