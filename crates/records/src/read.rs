//! Reading a record file back: line by line, each line bounded, the header checked first.

use std::io::BufRead;

use crate::{FORMAT, Header, MAX_LINE_BYTES, Record, VERSION};

/// Why a record file, or a line of it, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not a record file of mcp-forensics (its first line is no records header)")]
    NotRecords,
    #[error("records of layout version {found}; this build reads version {VERSION}")]
    Version { found: u32 },
    #[error("line {line}: {message}")]
    Line { line: u64, message: String },
    #[error("read error at line {line}: {source}")]
    Io {
        line: u64,
        #[source]
        source: std::io::Error,
    },
}

/// Whether the first bytes of a file are a record file's header.
pub fn looks_like_records(first: &[u8]) -> bool {
    let start = first
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(first.len());
    let first = &first[start..];
    first.starts_with(b"{\"record\":\"header\"") && memmem(first, FORMAT.as_bytes()).is_some()
}

fn memmem(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The records of one file, after its header.
pub struct RecordReader<R: BufRead> {
    input: R,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    max_line: usize,
}

impl<R: BufRead> RecordReader<R> {
    /// Reads and checks the header.
    pub fn open(input: R) -> Result<(Header, RecordReader<R>), RecordError> {
        let mut reader = RecordReader {
            input,
            buf: Vec::new(),
            line: 0,
            done: false,
            max_line: MAX_LINE_BYTES,
        };
        let header = match reader.next() {
            Some(Ok(Record::Header(h))) => h,
            Some(Err(RecordError::Line { .. })) | Some(Ok(_)) | None => {
                return Err(RecordError::NotRecords);
            }
            Some(Err(e)) => return Err(e),
        };
        if header.format != FORMAT {
            return Err(RecordError::NotRecords);
        }
        if header.version != VERSION {
            return Err(RecordError::Version {
                found: header.version,
            });
        }
        Ok((header, reader))
    }

    /// The reader with another bound on a line's bytes (tests).
    pub fn with_max_line(mut self, max_line: usize) -> RecordReader<R> {
        self.max_line = max_line;
        self
    }

    /// The number of the line read last, from 1.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The next line, at most [`MAX_LINE_BYTES`]: `Ok(false)` at the end of the file.
    fn read_line(&mut self) -> Result<bool, RecordError> {
        self.buf.clear();
        self.line += 1;
        let limit = self.max_line as u64 + 1;
        let n = std::io::Read::take(&mut self.input, limit)
            .read_until(b'\n', &mut self.buf)
            .map_err(|source| RecordError::Io {
                line: self.line,
                source,
            })?;
        if n as u64 >= limit && self.buf.last() != Some(&b'\n') {
            let max = self.max_line;
            return Err(self.bad(format!("a line longer than {max} bytes")));
        }
        Ok(n > 0)
    }

    fn bad(&mut self, message: String) -> RecordError {
        // A line past the cap, or bytes that are not records: what follows cannot be trusted
        // to be where a line starts.
        self.done = true;
        RecordError::Line {
            line: self.line,
            message,
        }
    }
}

impl<R: BufRead> Iterator for RecordReader<R> {
    type Item = Result<Record, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            match self.read_line() {
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Ok(true) if self.buf.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(true) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            return Some(match serde_json::from_slice::<Record>(&self.buf) {
                Ok(r) => Ok(r),
                Err(e) => Err(RecordError::Line {
                    line: self.line,
                    message: e.to_string(),
                }),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use mcpf_http::{Body, ExchangeId, Headers, HttpEvent, Outcome, Request};
    use mcpf_model::{ConnId, FrameRef, InputReport, Mark, Timestamp};

    use super::*;
    use crate::{End, InputEntry, RecordWriter, RunStats};

    fn mark(ns: i64, frame: u64) -> Mark {
        Mark {
            time: Timestamp(ns),
            frame: FrameRef::new(0, frame),
        }
    }

    fn request(index: u32, body: &[u8], session: &str) -> HttpEvent {
        let addr: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        HttpEvent::Request(Box::new(Request {
            exchange: ExchangeId {
                conn: ConnId::tcp(3),
                index,
            },
            client: addr,
            server: "127.0.0.1:8080".parse().unwrap(),
            method: "POST".into(),
            target: "/mcp".into(),
            version: 1,
            headers: Headers(vec![("Mcp-Session-Id".into(), session.into())]),
            body: Body {
                data: body.to_vec(),
                wire_bytes: body.len() as u64,
                ..Body::default()
            },
            first: mark(10, 4),
            last: mark(20 - i64::from(index), 5),
            outcome: Outcome::Complete,
            head_complete: true,
        }))
    }

    fn file() -> Vec<u8> {
        let header = Header::new(
            "test".into(),
            vec![InputEntry {
                index: 0,
                path: "a.pcap".into(),
                source: mcpf_model::SourceFormat::Capture,
            }],
        );
        let mut w = RecordWriter::new(Vec::new(), &header).unwrap();
        w.event(request(
            0,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            "s-1",
        ))
        .unwrap();
        w.event(request(1, &[0x1f, 0x8b, 0x00, 0xff], "s-2"))
            .unwrap();
        let input = InputReport {
            index: 0,
            path: "a.pcap".into(),
            packets: 9,
            ..InputReport::default()
        };
        w.finish(vec![input], Vec::new(), RunStats::default())
            .unwrap()
    }

    #[test]
    fn what_is_written_is_read_back_in_order() {
        let bytes = file();
        assert!(looks_like_records(&bytes));
        let (header, reader) = RecordReader::open(&bytes[..]).unwrap();
        assert_eq!(header.inputs[0].path, "a.pcap");
        let records: Vec<Record> = reader.map(Result::unwrap).collect();
        let Record::Http(first) = &records[0] else {
            panic!("{records:?}")
        };
        assert_eq!(
            (first.seq, first.at, first.session.as_deref()),
            (0, Timestamp(20), Some("s-1"))
        );
        let Record::Http(second) = &records[1] else {
            panic!()
        };
        // `at` never goes back, though the second event was completed earlier.
        assert_eq!((second.seq, second.at), (1, Timestamp(20)));
        let HttpEvent::Request(r) = &second.event else {
            panic!()
        };
        assert_eq!(r.body.data, vec![0x1f, 0x8b, 0x00, 0xff]);
        assert!(matches!(records[2], Record::Input(ref i) if i.packets == 9));
        assert!(matches!(records[3], Record::Stats(_)));
        assert!(matches!(records[4], Record::End(End { events: 2 })));
        assert_eq!(records.len(), 5);
    }

    #[test]
    fn damage_ends_the_reading_where_it_is() {
        let text = String::from_utf8(file()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines[2] = "{\"record\":\"http\",\"seq\":";
        let damaged = lines.join("\n");
        let (_, reader) = RecordReader::open(damaged.as_bytes()).unwrap();
        let read: Vec<_> = reader.collect();
        assert!(read[0].is_ok());
        assert!(matches!(read[1], Err(RecordError::Line { line: 3, .. })));
        // Past the bad line, the reader goes on: it is the caller who stops.
        assert!(read.len() >= 2);
        let whole = file();
        let (_, reader) = RecordReader::open(&whole[..]).unwrap();
        let mut short = reader.with_max_line(100);
        assert!(matches!(short.next(), Some(Err(RecordError::Line { .. }))));
        assert!(
            short.next().is_none(),
            "nothing is read past a line over the bound"
        );
    }

    #[test]
    fn not_records_and_other_versions_are_refused() {
        assert!(matches!(
            RecordReader::open(&b"{\"a\":1}\n"[..]),
            Err(RecordError::NotRecords)
        ));
        assert!(matches!(
            RecordReader::open(&b""[..]),
            Err(RecordError::NotRecords)
        ));
        let text = String::from_utf8(file())
            .unwrap()
            .replacen("\"version\":1", "\"version\":2", 1);
        assert!(matches!(
            RecordReader::open(text.as_bytes()),
            Err(RecordError::Version { found: 2 })
        ));
        assert!(!looks_like_records(b"\xd4\xc3\xb2\xa1"));
    }
}
