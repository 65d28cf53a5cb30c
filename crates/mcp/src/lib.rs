#![forbid(unsafe_code)]
#![warn(unreachable_pub)]
//! The MCP stage: HTTP exchanges in, MCP sessions out.
//!
//! [`Builder`] is an [`HttpSink`](mcpf_http::HttpSink): it files every exchange that speaks MCP
//! under its session (Streamable HTTP by `Mcp-Session-Id`, legacy HTTP+SSE by the endpoint URI,
//! stateless servers by client and `initialize` boundaries), keeps each SSE event as a compact
//! record, and when a session is over [`analysis`] works out fallbacks, resumes and the
//! namespace of every event. [`jsonrpc`] reads the JSON-RPC envelopes; nothing here knows
//! packets, or whether an exchange came from a capture, a HAR file or a log beyond the input's
//! [`SourceFormat`](mcpf_model::SourceFormat).

mod analysis;
mod anomalies;
mod answers;
mod builder;
pub mod ids;
pub mod jsonrpc;
pub mod model;
mod packed;
mod payloads;
mod prefix;
pub mod profile;
pub mod revision;

pub use anomalies::{Anomalies, KindCount, MAX_ANOMALIES_KEPT};
pub use answers::{Answer, AnswerIndex, AnswerTexts};
pub use builder::{
    Builder, MAX_MINTING_SERVERS, MAX_SESSION_EVENTS, MAX_SESSION_EXCHANGES, McpStats, NotCarried,
    Prepared, SessionCallback, prepare,
};
pub use payloads::{PayloadRef, Payloads};
