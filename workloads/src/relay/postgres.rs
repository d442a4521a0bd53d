//! PostgreSQL's wire protocol (version 3), read as it passes the relay: the client's messages
//! by type, the statements its Executes and Queries run (text normalised), and the rows the
//! server sends back. The relay declines TLS and GSS encryption itself (it answers `N`), so a
//! client that prefers encryption talks in the clear and every message can be read; a client
//! that requires it fails to connect, which the fork reports.
//!
//! Framing is written out here (a type byte and a length): the `postgres-protocol` crate parses
//! the server's messages only, not the client's.

use super::Tally;
use crate::sql_text::normalise_sql;
use std::collections::HashMap;

/// `SSLRequest`'s code in a startup-phase message.
const SSL_REQUEST: u32 = 80_877_103;
/// `GSSENCRequest`'s code.
const GSSENC_REQUEST: u32 = 80_877_104;

/// What the client side of one connection has said so far.
#[derive(Debug, Default)]
pub(crate) struct Frontend {
    /// Past the startup message: every message has a type byte.
    typed: bool,
    /// Prepared statements by name (`""` is the unnamed one), their text normalised.
    prepared: HashMap<String, String>,
    /// Portals by name, with the text of the statement they were bound from.
    portals: HashMap<String, String>,
}

/// What to do with bytes read from the client.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Relayed {
    /// Bytes to pass on to the server.
    pub to_server: Vec<u8>,
    /// Bytes the relay answers the client with itself (`N` to an encryption request).
    pub to_client: Vec<u8>,
}

impl Frontend {
    /// Takes every complete message off the front of `pending`, counting it into `tally`;
    /// an incomplete one stays for the next read.
    pub(crate) fn read(&mut self, pending: &mut Vec<u8>, tally: &mut Tally) -> Relayed {
        let mut out = Relayed::default();
        let mut at = 0;
        while let Some(len) = self.frame_len(&pending[at..]) {
            let frame = &pending[at..at + len];
            if self.typed {
                self.message(frame[0], &frame[5..], tally);
                out.to_server.extend_from_slice(frame);
            } else if let Some(answer) = self.startup(frame) {
                out.to_client.extend_from_slice(answer);
            } else {
                out.to_server.extend_from_slice(frame);
            }
            at += len;
        }
        pending.drain(..at);
        out
    }

    /// The length of the complete message at the front of `buf`, if it is all there.
    fn frame_len(&self, buf: &[u8]) -> Option<usize> {
        let header = if self.typed { 5 } else { 4 };
        let start = usize::from(self.typed);
        let len_bytes: [u8; 4] = buf.get(start..start + 4)?.try_into().ok()?;
        let len = (u32::from_be_bytes(len_bytes) as usize).max(4) + start;
        (buf.len() >= len.max(header)).then_some(len.max(header))
    }

    /// A startup-phase message: an encryption request is declined here (the answer), anything
    /// else passes; the startup message itself ends the phase.
    fn startup(&mut self, frame: &[u8]) -> Option<&'static [u8]> {
        let code = frame.get(4..8).map(|c| u32::from_be_bytes(c.try_into().expect("four bytes")));
        match code {
            Some(SSL_REQUEST | GSSENC_REQUEST) => Some(b"N"),
            Some(80_877_102) => None,
            _ => {
                self.typed = true;
                None
            }
        }
    }

    /// One typed message: counted by type, and by statement for Query and Execute.
    fn message(&mut self, kind: u8, body: &[u8], tally: &mut Tally) {
        *tally.messages.entry(message_name(kind).to_string()).or_default() += 1;
        let mut fields = body.split(|&b| b == 0).map(|s| String::from_utf8_lossy(s).into_owned());
        let mut next = || fields.next().unwrap_or_default();
        match kind {
            b'Q' => *tally.statements.entry(normalise_sql(&next())).or_default() += 1,
            b'P' => {
                let name = next();
                self.prepared.insert(name, normalise_sql(&next()));
            }
            b'B' => {
                let portal = next();
                let text =
                    self.prepared.get(&next()).cloned().unwrap_or_else(|| "(a statement prepared before)".into());
                self.portals.insert(portal, text);
            }
            b'E' => {
                let text = self.portals.get(&next()).cloned().unwrap_or_else(|| "(an unknown portal)".into());
                *tally.statements.entry(text).or_default() += 1;
            }
            b'C' => {
                let (what, name) = (body.first().copied(), String::from_utf8_lossy(body.get(1..).unwrap_or_default()));
                let name = name.trim_end_matches('\0');
                if what == Some(b'S') {
                    self.prepared.remove(name);
                } else {
                    self.portals.remove(name);
                }
            }
            _ => {}
        }
    }
}

/// The client message a type byte stands for, as the PostgreSQL documentation names it.
fn message_name(kind: u8) -> &'static str {
    match kind {
        b'Q' => "Query",
        b'P' => "Parse",
        b'B' => "Bind",
        b'E' => "Execute",
        b'S' => "Sync",
        b'D' => "Describe",
        b'C' => "Close",
        b'H' => "Flush",
        b'X' => "Terminate",
        b'p' => "PasswordMessage",
        b'd' => "CopyData",
        b'c' => "CopyDone",
        b'f' => "CopyFail",
        b'F' => "FunctionCall",
        _ => "(unknown message)",
    }
}

/// What the server side of one connection has said so far: its rows are counted.
#[derive(Debug, Default)]
pub(crate) struct Backend {
    pending: Vec<u8>,
}

impl Backend {
    /// Counts the complete messages among the bytes read so far (they pass on unchanged).
    pub(crate) fn read(&mut self, bytes: &[u8], tally: &mut Tally) {
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        while let Some(len_bytes) = self.pending.get(at + 1..at + 5) {
            let len = 1 + u32::from_be_bytes(len_bytes.try_into().expect("four bytes")).max(4) as usize;
            if self.pending.len() < at + len {
                break;
            }
            if self.pending[at] == b'D' {
                tally.rows += 1;
            }
            at += len;
        }
        self.pending.drain(..at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn untyped(code: u32, rest: &[u8]) -> Vec<u8> {
        let mut m = (rest.len() as u32 + 8).to_be_bytes().to_vec();
        m.extend_from_slice(&code.to_be_bytes());
        m.extend_from_slice(rest);
        m
    }

    #[test]
    fn an_encryption_request_is_declined_and_the_startup_passes() {
        let (mut f, mut t) = (Frontend::default(), Tally::default());
        let mut pending = untyped(SSL_REQUEST, b"");
        let out = f.read(&mut pending, &mut t);
        assert_eq!((out.to_client.as_slice(), out.to_server.len()), (&b"N"[..], 0));
        let startup = untyped(196_608, b"user\0postgres\0\0");
        let mut pending = startup.clone();
        assert_eq!(f.read(&mut pending, &mut t).to_server, startup);
        assert!(f.typed && t.messages.is_empty() && pending.is_empty());
    }

    #[test]
    fn executes_count_the_statement_their_portal_was_bound_from() {
        let (mut f, mut t) = (Frontend { typed: true, ..Frontend::default() }, Tally::default());
        let mut flight = typed(b'P', b"s1\0SELECT id  FROM t\n WHERE id = $1\0\0\0");
        flight.extend(typed(b'B', b"\0s1\0\0\0\0\0\0\0"));
        flight.extend(typed(b'E', b"\0\0\0\0\0"));
        flight.extend(typed(b'S', b""));
        flight.extend(typed(b'Q', b"COMMIT\0"));
        let whole = flight.clone();
        // Split mid-message: the first read passes only what is complete.
        let mut pending = flight[..7].to_vec();
        assert!(f.read(&mut pending, &mut t).to_server.is_empty());
        pending.extend_from_slice(&flight[7..]);
        assert_eq!(f.read(&mut pending, &mut t).to_server, whole);
        let names: Vec<(&str, u64)> = t.messages.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(names, [("Bind", 1), ("Execute", 1), ("Parse", 1), ("Query", 1), ("Sync", 1)]);
        let statements: Vec<(&str, u64)> = t.statements.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(statements, [("COMMIT", 1), ("SELECT id FROM t WHERE id = $1", 1)]);
    }

    #[test]
    fn the_backend_counts_data_rows_across_reads() {
        let (mut b, mut t) = (Backend::default(), Tally::default());
        let mut bytes = typed(b'D', b"\0\x01\0\0\0\x011");
        bytes.extend(typed(b'D', b"\0\x01\0\0\0\x012"));
        bytes.extend(typed(b'Z', b"I"));
        b.read(&bytes[..10], &mut t);
        assert_eq!(t.rows, 0);
        b.read(&bytes[10..], &mut t);
        assert_eq!(t.rows, 2);
        assert!(b.pending.is_empty());
    }
}
