//! mcp-forensics: a forensic analyzer for Model Context Protocol traffic.
//!
//! A one-way pipeline, each stage a module with a small typed interface:
//! [`capture`] (packets → TCP byte streams) → [`http`] (HTTP/1.1 exchanges, SSE events,
//! JSON-RPC messages) → `mcp` (sessions, streams, namespaces) → `detect` (findings) →
//! [`report`] (terminal, JSON, NDJSON). [`app`] wires them; `main.rs` only calls [`app::run`].

pub mod alloc;
pub mod app;
pub mod capture;
pub mod chunked;
pub mod cli;
pub mod detect;
pub mod http;
pub mod ingest;
pub mod jsonrpc;
pub mod manpage;
pub mod mcp;
pub mod model;
pub mod progress;
pub mod report;
