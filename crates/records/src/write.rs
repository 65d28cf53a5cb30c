//! Writing a record file: the header, each HTTP event as the run hands it on, then what the run
//! counted, then the end.

use std::io::{self, Write};

use mcpf_http::HttpEvent;
use mcpf_model::{Capabilities, InputId, InputReport, Timestamp};

use crate::{CapabilitiesRecord, End, Header, HttpRecord, Record, RunStats, SessionKeys};

/// Writes one record file, one line per record.
pub struct RecordWriter<W: Write> {
    out: W,
    events: u64,
    /// The latest time of any event so far.
    at: Timestamp,
    keys: SessionKeys,
}

impl<W: Write> RecordWriter<W> {
    /// Starts a file with its header.
    pub fn new(mut out: W, header: &Header) -> io::Result<RecordWriter<W>> {
        line(&mut out, &Record::Header(header.clone()))?;
        Ok(RecordWriter {
            out,
            events: 0,
            at: Timestamp::default(),
            keys: SessionKeys::default(),
        })
    }

    /// Writes an HTTP event, in the order the session stage would take it.
    pub fn event(&mut self, event: HttpEvent) -> io::Result<()> {
        if let Some(m) = crate::remap::completed_at(&event) {
            self.at = self.at.max(m.time);
        }
        let record = HttpRecord {
            seq: self.events,
            at: self.at,
            session: self.keys.key(&event),
            event,
        };
        self.events += 1;
        line(&mut self.out, &Record::Http(record))
    }

    /// Ends the file with what the run counted: each input's report, what each HAR file or log
    /// can support, the run's counts, and the end line.
    pub fn finish(
        mut self,
        inputs: Vec<InputReport>,
        capabilities: Vec<(InputId, Capabilities)>,
        stats: RunStats,
    ) -> io::Result<W> {
        for (input, mut capabilities) in capabilities {
            let lacks = std::mem::take(&mut capabilities.lacks);
            let record = CapabilitiesRecord {
                input,
                capabilities,
                lacks,
            };
            line(&mut self.out, &Record::Capabilities(record))?;
        }
        for input in inputs {
            line(&mut self.out, &Record::Input(input))?;
        }
        line(&mut self.out, &Record::Stats(stats))?;
        let end = End {
            events: self.events,
        };
        line(&mut self.out, &Record::End(end))?;
        self.out.flush()?;
        Ok(self.out)
    }
}

fn line<W: Write>(out: &mut W, record: &Record) -> io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    out.write_all(b"\n")
}
