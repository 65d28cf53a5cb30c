//! Opening the inputs of a run: each as what its content says it is (a capture, a HAR file or
//! an access log), those that cannot be opened listed as unreadable and told to the caller, the
//! run going on without them.

use mcpf_capture::{self as capture, CaptureInput};
use mcpf_ingest::{FormatChoice, LogMap};
use mcpf_model::{InputId, InputReport, OpenError, SourceFormat};

use crate::Observer;

/// With several inputs, each capture's first frame is read as it is opened and its file closed
/// until its turn: a thousand inputs hold no file open and no read buffer before then
/// ([`capture::MAX_OPEN`]).
fn prime(input: &mut CaptureInput, inputs: usize) {
    if inputs > 1 {
        input.prime();
    }
}

/// The inputs a run is asked to read, once directories and globs are expanded
/// ([`crate::inputs::expand`]).
#[derive(Clone, Debug, Default)]
pub struct InputSpec {
    pub files: Vec<String>,
    /// `--input-format`.
    pub format: FormatChoice,
    /// `--log-map` or `--log-format`, read and checked.
    pub log_map: Option<LogMap>,
}

/// The inputs of a run, each opened as what its content says it is.
pub struct Opened {
    /// Every input named, in order.
    pub paths: Vec<String>,
    pub(crate) captures: Vec<CaptureInput>,
    /// HAR files and access logs: (input index, path, format).
    pub(crate) others: Vec<(InputId, String, SourceFormat)>,
    pub(crate) log_map: Option<LogMap>,
    pub(crate) failed: bool,
    /// Entries for the inputs that could not be opened, so the report lists every input.
    pub(crate) unreadable: Vec<InputReport>,
    /// Record files (`mcpf_records`) with their headers, analysed in place of the inputs they
    /// were extracted from.
    pub(crate) records: Vec<(String, mcpf_records::Header)>,
}

impl Opened {
    /// Opens every input; those that fail are told to `observer` and listed as unreadable.
    pub fn open(spec: &InputSpec, observer: &mut dyn Observer) -> Opened {
        let mut opened = Opened {
            paths: spec.files.clone(),
            captures: Vec::new(),
            others: Vec::new(),
            log_map: spec.log_map.clone(),
            failed: false,
            unreadable: Vec::new(),
            records: Vec::new(),
        };
        let have_map = opened.log_map.is_some();
        for (i, path) in spec.files.iter().enumerate() {
            let i = i as InputId;
            if let Some(header) = record_header(path) {
                match header {
                    Ok(h) => opened.records.push((path.clone(), h)),
                    Err(e) => {
                        let e = OpenError {
                            path: path.clone(),
                            message: e.to_string(),
                            hint: None,
                        };
                        observer.unreadable(&e);
                        opened.failed = true;
                        opened.unreadable.push(InputReport::failed(i, &e));
                    }
                }
                continue;
            }
            let resolved = match &opened.log_map {
                Some(m) if m.is_text() => mcpf_ingest::resolve_text_log(path),
                _ => mcpf_ingest::resolve(path, spec.format, have_map),
            };
            let format = resolved.and_then(|f| match f {
                SourceFormat::Capture => capture::open_capture(path, i).map(|mut c| {
                    prime(&mut c, spec.files.len());
                    opened.captures.push(c);
                    f
                }),
                _ => Ok(f),
            });
            match format {
                Ok(SourceFormat::Capture) => {}
                Ok(f) => opened.others.push((i, path.clone(), f)),
                Err(e) => {
                    observer.unreadable(&e);
                    opened.failed = true;
                    opened.unreadable.push(InputReport::failed(i, &e));
                }
            }
        }
        opened.name_records_inputs();
        opened
    }

    /// A run of record files and nothing else reports the inputs the records came from, by
    /// the names their extract runs gave them (so its report is theirs).
    fn name_records_inputs(&mut self) {
        if !self.records.is_empty() && self.records.len() == self.paths.len() {
            self.paths = self
                .records
                .iter()
                .flat_map(|(_, h)| h.inputs.iter().map(|i| i.path.clone()))
                .collect();
        }
    }

    /// Opens every input named as a capture (the `flows` view reads nothing else).
    pub fn captures_only(files: &[String], observer: &mut dyn Observer) -> Opened {
        let mut opened = Opened {
            paths: files.to_vec(),
            captures: Vec::new(),
            others: Vec::new(),
            log_map: None,
            failed: false,
            unreadable: Vec::new(),
            records: Vec::new(),
        };
        for (i, path) in files.iter().enumerate() {
            match capture::open_capture(path, i as InputId) {
                Ok(mut input) => {
                    prime(&mut input, files.len());
                    opened.captures.push(input);
                }
                Err(e) => {
                    observer.unreadable(&e);
                    opened.failed = true;
                    opened
                        .unreadable
                        .push(InputReport::failed(i as InputId, &e));
                }
            }
        }
        opened
    }

    /// One capture held in memory, as input 0 named `name` (the fuzz targets use it to run the
    /// production path on bytes).
    pub fn capture_bytes(name: &str, bytes: Vec<u8>) -> Result<Opened, OpenError> {
        let capture = capture::capture_from_bytes(name, bytes, 0)?;
        Ok(Opened {
            paths: vec![name.to_string()],
            captures: vec![capture],
            others: Vec::new(),
            log_map: None,
            failed: false,
            unreadable: Vec::new(),
            records: Vec::new(),
        })
    }

    /// Nothing could be opened.
    pub fn is_empty(&self) -> bool {
        self.captures.is_empty() && self.others.is_empty() && self.records.is_empty()
    }

    /// The format of every input, by index (unreadable ones count as captures: they feed
    /// nothing).
    pub fn sources(&self) -> Vec<SourceFormat> {
        let mut sources = vec![SourceFormat::Capture; self.paths.len()];
        for (i, _, format) in &self.others {
            sources[*i as usize] = *format;
        }
        sources
    }
}

/// The header of `path` when its first line says it is a record file of `extract` (a file that
/// cannot be read is left to the other formats, which say why).
fn record_header(path: &str) -> Option<Result<mcpf_records::Header, mcpf_records::RecordError>> {
    use std::io::BufRead;
    // Only a regular file is peeked at: the bytes of a stream (standard input, a FIFO) can be
    // read once, by the reader of what it is.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut reader = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    // The first bytes are looked at where the reader holds them, then read as the header.
    if !mcpf_records::looks_like_records(reader.fill_buf().ok()?) {
        return None;
    }
    Some(mcpf_records::RecordReader::open(reader).map(|(h, _)| h))
}
