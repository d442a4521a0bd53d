//! Redis's protocol (RESP2 and RESP3 requests), read as it passes the relay: every command the
//! client sends, by name, counted as a message and as a statement (its arguments stripped). Clients send a command as an array of bulk strings; an inline command
//! (one line of words) is read too. What cannot be read (a client speaking something else) is
//! passed on uncounted as a command, and the connection is counted as unreadable.
//!
//! Framing is written out here: the `redis` crate's parser reads a whole value but cannot say
//! that a request is still incomplete without consuming it.

use super::Tally;

/// What the client side of one connection has sent so far.
#[derive(Debug, Default)]
pub(crate) struct Requests {
    pending: Vec<u8>,
    /// A request could not be read: the rest of the connection passes uncounted.
    unreadable: bool,
}

impl Requests {
    /// Counts the complete commands among the bytes read so far (they pass on unchanged).
    pub(crate) fn read(&mut self, bytes: &[u8], tally: &mut Tally) {
        if self.unreadable {
            return;
        }
        self.pending.extend_from_slice(bytes);
        let mut at = 0;
        loop {
            match command(&self.pending[at..]) {
                Ok(Some((len, name))) => {
                    *tally.statements.entry(name.clone()).or_default() += 1;
                    *tally.messages.entry(name).or_default() += 1;
                    at += len;
                }
                Ok(None) => break,
                Err(()) => {
                    self.unreadable = true;
                    tally.unreadable_connections += 1;
                    self.pending.clear();
                    return;
                }
            }
        }
        self.pending.drain(..at);
    }
}

/// The request at the front of `buf`: its length and command name (upper case), `None` while
/// it is incomplete, an error when it is not RESP.
fn command(buf: &[u8]) -> Result<Option<(usize, String)>, ()> {
    let Some(first) = buf.first() else { return Ok(None) };
    if *first != b'*' {
        let Some(end) = line_end(buf) else { return Ok(None) };
        let text = std::str::from_utf8(&buf[..end]).map_err(|_| ())?;
        let name = text.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        return Ok(Some((end + 2, name)));
    }
    let Some((count, mut at)) = header(buf, b'*')? else { return Ok(None) };
    let mut name = String::new();
    for i in 0..count {
        let Some((len, start)) = header(&buf[at..], b'$')? else { return Ok(None) };
        let end = at + start + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Err(());
        }
        if i == 0 {
            name = String::from_utf8_lossy(&buf[at + start..end]).to_ascii_uppercase();
        }
        at = end + 2;
    }
    Ok(Some((at, name)))
}

/// `<marker><number>\r\n` at the front of `buf`: the number and the header's length.
fn header(buf: &[u8], marker: u8) -> Result<Option<(usize, usize)>, ()> {
    let Some(end) = line_end(buf) else { return Ok(None) };
    if buf[0] != marker {
        return Err(());
    }
    let n = std::str::from_utf8(&buf[1..end]).ok().and_then(|s| s.parse::<usize>().ok()).ok_or(())?;
    Ok(Some((n, end + 2)))
}

fn line_end(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_counted_by_name_across_reads() {
        let (mut r, mut t) = (Requests::default(), Tally::default());
        let bytes = b"*2\r\n$3\r\nget\r\n$5\r\nk:1\r\n\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nPING\r\n";
        r.read(&bytes[..20], &mut t);
        assert!(t.messages.is_empty());
        r.read(&bytes[20..], &mut t);
        let names: Vec<(&str, u64)> = t.messages.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(names, [("GET", 1), ("PING", 1), ("SET", 1)]);
        assert!(r.pending.is_empty() && t.unreadable_connections == 0);
    }

    #[test]
    fn what_is_not_resp_is_counted_as_unreadable() {
        let (mut r, mut t) = (Requests::default(), Tally::default());
        r.read(b"*1\r\n#oops\r\n", &mut t);
        r.read(b"*1\r\n$4\r\nPING\r\n", &mut t);
        assert_eq!((t.unreadable_connections, t.messages.len()), (1, 0));
    }
}
