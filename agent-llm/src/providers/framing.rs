//! Cutting a streamed response body into events: server-sent events (SSE) and NDJSON lines,
//! in time linear in the bytes received and memory bounded by a ceiling per event.
//!
//! A provider's body arrives in pieces of any size; an event may span many pieces and one
//! piece may hold many events. [`Lines`] scans each received byte once for a line end (never
//! the buffer from its start again) and moves at most the unfinished tail of the last piece
//! when it drops finished lines, so a body of `n` bytes costs O(n) however it is cut. A line
//! or SSE event longer than the ceiling is an [`LlmError::ResponseTooLarge`] before it is
//! buffered further. The parsers hold no I/O: the transport pushes bytes in and pulls events
//! out, and tests feed them bytes directly.

use crate::error::{LlmError, snippet};
use crate::providers::wire::WireEvent;

/// The builder setting that raises the ceiling of one event or line, for error messages.
pub(crate) const EVENT_SETTING: &str = "max_event_bytes";

/// Lines of a byte stream, split on `\n` (and, for SSE, `\r` and `\r\n`).
#[derive(Debug)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// Where the first line not yet handed out starts.
    start: usize,
    /// Bytes before this were scanned for a line end already.
    scanned: usize,
    /// The last line ended with `\r` at the end of the buffer: a `\n` first in the next
    /// piece belongs to it.
    skip_lf: bool,
    /// Whether `\r` alone ends a line (SSE) or only `\n` does (NDJSON).
    cr_ends_line: bool,
    /// Test hook: bytes examined for a line end, and bytes moved when compacting.
    stats: ScanStats,
}

/// How much work [`Lines`] did: both stay within the bytes pushed when scanning is linear.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScanStats {
    /// Bytes pushed in.
    pub(crate) pushed: u64,
    /// Bytes examined while looking for line ends.
    pub(crate) scanned: u64,
    /// Bytes moved to the front of the buffer when finished lines were dropped.
    pub(crate) moved: u64,
}

impl Lines {
    pub(crate) fn new(cr_ends_line: bool) -> Self {
        Lines {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            skip_lf: false,
            cr_ends_line,
            stats: ScanStats::default(),
        }
    }

    /// Appends a piece of the body. Lines handed out before are dropped first; what moves is
    /// only the unfinished line after them, which came in the previous piece.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            let tail = self.buf.len() - self.start;
            self.stats.moved += tail as u64;
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.stats.pushed += bytes.len() as u64;
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole line (without its line end), or `None` until more bytes arrive.
    pub(crate) fn next_line(&mut self) -> Option<&[u8]> {
        if self.skip_lf && self.scanned < self.buf.len() {
            self.skip_lf = false;
            if self.buf[self.scanned] == b'\n' {
                self.scanned += 1;
                self.start = self.scanned;
                self.stats.scanned += 1;
            }
        }
        let cr = self.cr_ends_line;
        let rest = &self.buf[self.scanned..];
        let Some(found) = rest.iter().position(|b| *b == b'\n' || (cr && *b == b'\r')) else {
            self.stats.scanned += rest.len() as u64;
            self.scanned = self.buf.len();
            return None;
        };
        self.stats.scanned += found as u64 + 1;
        let end = self.scanned + found;
        let mut next = end + 1;
        if self.buf[end] == b'\r' {
            match self.buf.get(next) {
                Some(b'\n') => next += 1,
                Some(_) => {}
                None => self.skip_lf = true,
            }
        }
        let line_start = self.start;
        self.scanned = next;
        self.start = next;
        Some(&self.buf[line_start..end])
    }

    /// Length of the unfinished line at the end of the buffer.
    pub(crate) fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The unfinished line at the end of the body (empty when the body ended with a line end).
    pub(crate) fn take_rest(&mut self) -> Vec<u8> {
        let rest = self.buf.split_off(self.start);
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
        rest
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> ScanStats {
        self.stats
    }
}

fn too_large(provider: &'static str, what: &'static str, limit: usize) -> LlmError {
    LlmError::ResponseTooLarge {
        provider,
        what,
        limit,
        setting: EVENT_SETTING,
    }
}

/// Server-sent events, as the HTML standard parses them: `event:` and `data:` fields (data
/// lines joined with `\n`), comments and other fields ignored, an event dispatched at a blank
/// line, an unfinished event at the end of the body dropped, a leading byte-order mark skipped.
#[derive(Debug)]
pub(crate) struct SseParser {
    provider: &'static str,
    max_event: usize,
    lines: Lines,
    event: String,
    data: String,
    has_data: bool,
    first_line: bool,
}

impl SseParser {
    pub(crate) fn new(provider: &'static str, max_event: usize) -> Self {
        SseParser {
            provider,
            max_event,
            lines: Lines::new(true),
            event: String::new(),
            data: String::new(),
            has_data: false,
            first_line: true,
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
    }

    /// The next complete event, `None` until more bytes arrive.
    pub(crate) fn next_event(&mut self) -> Result<Option<WireEvent>, LlmError> {
        loop {
            let held = self.event.len() + self.data.len();
            let Some(raw) = self.lines.next_line() else {
                if held + self.lines.pending() > self.max_event {
                    return Err(too_large(self.provider, "SSE event", self.max_event));
                }
                return Ok(None);
            };
            let mut line = raw;
            if std::mem::take(&mut self.first_line) {
                line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            }
            if held + line.len() > self.max_event {
                return Err(too_large(self.provider, "SSE event", self.max_event));
            }
            let line = std::str::from_utf8(line).map_err(|e| LlmError::MalformedResponse {
                provider: self.provider,
                reason: format!("SSE stream is not UTF-8: {e}"),
                bytes: snippet(line),
            })?;
            if line.is_empty() {
                let event = std::mem::take(&mut self.event);
                if std::mem::take(&mut self.has_data) {
                    let data = std::mem::take(&mut self.data);
                    return Ok(Some(WireEvent { event, data }));
                }
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "event" => value.clone_into(&mut self.event),
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                _ => {} // comments (empty field name), `id`, `retry`, unknown fields
            }
        }
    }

    /// The body ended: an unfinished event is dropped, as the standard says.
    pub(crate) fn finish(&mut self) -> Result<Option<WireEvent>, LlmError> {
        self.lines.take_rest();
        Ok(None)
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> ScanStats {
        self.lines.stats()
    }
}

/// One JSON document per line; blank lines are skipped, a last line without a line end
/// counts.
#[derive(Debug)]
pub(crate) struct NdjsonParser {
    provider: &'static str,
    max_line: usize,
    lines: Lines,
}

impl NdjsonParser {
    pub(crate) fn new(provider: &'static str, max_line: usize) -> Self {
        NdjsonParser {
            provider,
            max_line,
            lines: Lines::new(false),
        }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
    }

    /// The next non-blank line, `None` until more bytes arrive.
    pub(crate) fn next_event(&mut self) -> Result<Option<WireEvent>, LlmError> {
        let (provider, max_line) = (self.provider, self.max_line);
        loop {
            let Some(line) = self.lines.next_line() else {
                if self.lines.pending() > max_line {
                    return Err(too_large(provider, "NDJSON line", max_line));
                }
                return Ok(None);
            };
            if line.len() > max_line {
                return Err(too_large(provider, "NDJSON line", max_line));
            }
            if let Some(event) = line_event(provider, line)? {
                return Ok(Some(event));
            }
        }
    }

    /// The body ended: its last line, when it had no line end.
    pub(crate) fn finish(&mut self) -> Result<Option<WireEvent>, LlmError> {
        let rest = self.lines.take_rest();
        if rest.len() > self.max_line {
            return Err(too_large(self.provider, "NDJSON line", self.max_line));
        }
        line_event(self.provider, &rest)
    }

    #[cfg(test)]
    pub(crate) fn stats(&self) -> ScanStats {
        self.lines.stats()
    }
}

fn line_event(provider: &'static str, line: &[u8]) -> Result<Option<WireEvent>, LlmError> {
    let text = std::str::from_utf8(line).map_err(|e| LlmError::MalformedResponse {
        provider,
        reason: format!("NDJSON line is not UTF-8: {e}"),
        bytes: snippet(line),
    })?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    Ok(Some(WireEvent {
        event: String::new(),
        data: text.to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn sse_all(pieces: &[&[u8]], max: usize) -> Result<Vec<WireEvent>, LlmError> {
        let mut p = SseParser::new("test", max);
        let mut out = Vec::new();
        for piece in pieces {
            p.push(piece);
            while let Some(ev) = p.next_event()? {
                out.push(ev);
            }
        }
        out.extend(p.finish()?);
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> WireEvent {
        WireEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn sse_follows_the_standard() {
        let body: &[u8] = b"\xEF\xBB\xBF: comment\nevent: a\ndata: 1\ndata:2\nid: 7\n\n\
            data\n\nevent: lonely\n\ndata: x\r\n\r\ndata: y\r\rdata: cut";
        assert_eq!(
            sse_all(&[body], MIB).unwrap(),
            vec![ev("a", "1\n2"), ev("", ""), ev("", "x"), ev("", "y")]
        );
    }

    #[test]
    fn sse_is_the_same_however_the_body_is_cut() {
        let body: &[u8] = b"event: a\r\ndata: hello\r\n\r\ndata: w\xC3\xB6rld\r\r";
        let whole = sse_all(&[body], MIB).unwrap();
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(sse_all(&[a, b], MIB).unwrap(), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(sse_all(&bytes, MIB).unwrap(), whole);
    }

    #[test]
    fn an_sse_event_over_the_ceiling_is_refused() {
        let err = sse_all(&[b"data: ", &[b'x'; 100], b"\n\n"], 64).unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::ResponseTooLarge {
                    what: "SSE event",
                    limit: 64,
                    ..
                }
            ),
            "{err}"
        );
        // Many small data lines add up to one event.
        let many = b"data: 0123456789\n".repeat(10);
        assert!(sse_all(&[&many], 64).is_err());
        // A line that never ends is refused before the body ends.
        let mut p = SseParser::new("test", 64);
        p.push(&[b'x'; 65]);
        assert!(p.next_event().is_err());
    }

    #[test]
    fn ndjson_lines_and_the_last_line_without_an_end() {
        let mut p = NdjsonParser::new("test", MIB);
        p.push(b"{\"a\":1}\n\n  \r\n{\"b\"");
        assert_eq!(p.next_event().unwrap(), Some(ev("", "{\"a\":1}")));
        assert_eq!(p.next_event().unwrap(), None);
        p.push(b":2}");
        assert_eq!(p.next_event().unwrap(), None);
        assert_eq!(p.finish().unwrap(), Some(ev("", "{\"b\":2}")));
    }

    #[test]
    fn an_ndjson_line_over_the_ceiling_is_refused() {
        let mut p = NdjsonParser::new("test", 8);
        p.push(b"0123456789\n");
        let err = p.next_event().unwrap_err();
        assert!(
            matches!(
                err,
                LlmError::ResponseTooLarge {
                    what: "NDJSON line",
                    limit: 8,
                    ..
                }
            ),
            "{err}"
        );
        let mut p = NdjsonParser::new("test", 8);
        p.push(b"012345678");
        assert!(p.next_event().is_err(), "refused before its end arrives");
    }

    /// A long line in one-byte pieces and many short lines in one piece: every byte is
    /// scanned once and moved at most once. Rescanning the buffer from its start on every
    /// read (the old reader) scans n^2/2 bytes for the first case and moves n^2/2 for the
    /// second.
    #[test]
    fn scanning_is_linear_in_the_bytes_received() {
        let n = 20_000;
        let mut p = NdjsonParser::new("test", MIB);
        let line = format!("\"{}\"\n", "x".repeat(n));
        for b in line.as_bytes() {
            p.push(std::slice::from_ref(b));
            let _ = p.next_event().unwrap();
        }
        let s = p.stats();
        assert_eq!(s.pushed, line.len() as u64);
        assert!(s.scanned <= s.pushed, "{s:?}");
        assert!(s.moved <= s.pushed, "{s:?}");

        let mut p = NdjsonParser::new("test", MIB);
        let body = "{}\n".repeat(n);
        p.push(body.as_bytes());
        let mut count = 0;
        while p.next_event().unwrap().is_some() {
            count += 1;
        }
        assert_eq!(count, n);
        let s = p.stats();
        assert!(s.scanned <= s.pushed && s.moved <= s.pushed, "{s:?}");

        let mut p = SseParser::new("test", MIB);
        let body = "data: {}\n\n".repeat(n);
        for piece in body.as_bytes().chunks(7) {
            p.push(piece);
            while p.next_event().unwrap().is_some() {}
        }
        let s = p.stats();
        assert!(s.scanned <= s.pushed && s.moved <= s.pushed, "{s:?}");
    }
}
