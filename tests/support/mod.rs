//! Test support shared by the pipeline tests: HTTP exchanges with the JSON-RPC messages they
//! carry (the HTTP stage knows nothing of JSON-RPC; the MCP stage's parser reads the bodies).

#![allow(dead_code)]

use std::ops::Deref;

use mcpf_mcp::jsonrpc::{ExchangeMessages, Message};

/// An exchange of the HTTP stage and its JSON-RPC messages.
#[derive(Debug)]
pub struct Exchange {
    inner: mcpf_http::exchange::Exchange,
    pub request_messages: Vec<Message>,
    pub response_messages: Vec<Message>,
    /// By SSE event index.
    pub event_messages: Vec<Vec<Message>>,
}

impl Deref for Exchange {
    type Target = mcpf_http::exchange::Exchange;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

/// Reads the JSON-RPC messages of every exchange.
pub fn with_messages(exchanges: Vec<mcpf_http::exchange::Exchange>) -> Vec<Exchange> {
    exchanges
        .into_iter()
        .map(|inner| {
            let m = ExchangeMessages::of(&inner);
            Exchange {
                inner,
                request_messages: m.request,
                response_messages: m.response,
                event_messages: m.events,
            }
        })
        .collect()
}

/// Every accounting ledger of a JSON report adds up: analysed + Σ skipped + Σ lost == total,
/// for packets and bytes of every input.
pub fn assert_ledgers_balance(doc: &serde_json::Value, name: &str) {
    for input in doc["inputs"].as_array().expect("inputs") {
        for unit in ["packets", "bytes"] {
            let l = &input["accounting"][unit];
            let sum = |k: &str| -> u64 {
                l[k].as_object()
                    .map_or(0, |m| m.values().map(|v| v.as_u64().unwrap()).sum())
            };
            let parts = l["analysed"].as_u64().unwrap() + sum("skipped") + sum("lost");
            assert_eq!(
                parts,
                l["total"].as_u64().unwrap(),
                "{name}: {unit} ledger {l}"
            );
        }
    }
}
