#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
//! Plain data shared by every stage of mcp-forensics: capture time, frame references, endpoints,
//! directions, connection identities, what each input is and can support, and the two records
//! every stage makes: anomalies ([`Anomaly`], named by kind) and notes ([`Note`]: warnings and
//! limits, typed, worded by the report).
//!
//! Nothing here knows about a protocol; it only gives later stages the vocabulary they need to
//! cite evidence (which input, which frame, when) and to say where it came from.

mod accounting;
mod anomaly;
mod conn;
pub mod file;
pub mod input;
pub mod interrupt;
mod note;
mod paged;
pub mod peeked;
mod timestamp;
pub mod wire_bytes;

pub use accounting::{Accounting, Ledger, bucket};
pub use anomaly::{Anomaly, AnomalyKind};
pub use conn::{ConnId, Direction, endpoint};
pub use input::{
    Capabilities, Coverage, FileFormat, FileKind, HeaderCoverage, InputReport, LogFlavor,
    OpenError, RecordUnit, SourceFormat,
};
pub use note::{
    CorruptUnit, DurationEstimate, Durations, McpHeader, Note, NoteKind, SourceLack, Tunnel,
};
pub use paged::PagedVec;
pub use timestamp::Timestamp;

/// A map keyed by values taken from the wire (session IDs, event IDs, tokens, addresses): its
/// hasher is seeded afresh in every run, so crafted traffic cannot make its keys collide.
/// Nothing may depend on its iteration order.
pub type WireMap<K, V> = std::collections::HashMap<K, V, WireHasher>;

/// A set of values taken from the wire; see [`WireMap`].
pub type WireSet<K> = std::collections::HashSet<K, WireHasher>;

/// The seeded hasher of [`WireMap`], for hashes that pick candidates among wire values.
pub type WireHasher = foldhash::fast::RandomState;

/// Index of an input file in the order given on the command line (0-based).
pub type InputId = u32;

/// A packet (or log line, or HAR entry) in a given input, numbered from 1 as Wireshark numbers
/// frames, so a person can jump to it with `frame.number == N`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct FrameRef {
    pub input: InputId,
    pub frame: u64,
}

impl FrameRef {
    pub fn new(input: InputId, frame: u64) -> Self {
        FrameRef { input, frame }
    }
}

/// Where and when a piece of reassembled data was completed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Mark {
    pub time: Timestamp,
    pub frame: FrameRef,
}
