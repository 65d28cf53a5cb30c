//! What a session negotiated: the protocol version and server info of the answer to its
//! `initialize`, and the revision of the spec the session is judged by.

use crate::jsonrpc::Kind;
use crate::model::{Session, Transport};

/// Fills protocol version and server info from the answer to `initialize`.
/// Returns the `protocolVersion` the `initialize` result named, if one was seen.
pub(crate) fn fill_initialize(s: &mut Session) -> Option<String> {
    let mut found: Option<(Option<String>, Option<String>)> = None;
    for st in &s.streams {
        let Some(init) = st
            .requests()
            .find(|m| m.method.as_deref() == Some("initialize"))
            .and_then(|m| m.id.clone())
        else {
            continue;
        };
        let answer = st
            .response_messages
            .iter()
            .chain(st.events.iter().flat_map(|e| e.messages.iter()))
            .find(|m| m.kind == Kind::Response && m.id.as_ref() == Some(&init));
        if let Some(a) = answer {
            found = Some((a.mcp.protocol_version.clone(), a.mcp.peer_info.clone()));
        }
    }
    // Legacy transport: the answer arrives on the SSE stream of another exchange.
    if found.is_none() {
        for st in &s.streams {
            for m in st.events.iter().flat_map(|e| e.messages.iter()) {
                if m.kind == Kind::Response && m.mcp.protocol_version.is_some() {
                    found = Some((m.mcp.protocol_version.clone(), m.mcp.peer_info.clone()));
                }
            }
        }
    }
    let (version, info) = found?;
    if version.is_some() {
        s.protocol_version = version.clone();
    }
    if info.is_some() {
        s.server_info = info;
    }
    version
}

/// The revision the session is judged by: its `initialize` result's, else its requests'
/// `MCP-Protocol-Version`, else what the spec says to assume.
/// `negotiated` is what the `initialize` result named (a source without bodies has none).
pub(crate) fn fill_revision(s: &mut Session, negotiated: Option<&str>) {
    use crate::revision::{Revision, RevisionFrom};
    let negotiated = negotiated.and_then(|v| Revision::named(v, RevisionFrom::Initialize));
    let header = || {
        s.streams
            .iter()
            .filter_map(|st| st.protocol_version_header.as_deref())
            .find_map(|v| Revision::named(v, RevisionFrom::Header))
    };
    s.revision = negotiated
        .or_else(header)
        .unwrap_or_else(|| Revision::assumed(s.transport == Transport::LegacySse));
}
