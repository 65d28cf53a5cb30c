//! Sessions and findings per input and per server: with many inputs from many hosts, where the
//! trouble is before which session it is.

use std::collections::BTreeMap;

use super::{Report, Selection};

/// One input's, or one server's, sessions and shown findings (positions in `Report::findings`).
#[derive(Debug)]
pub(crate) struct Rollup {
    pub(crate) name: String,
    pub(crate) input: Option<u32>,
    pub(crate) sessions: usize,
    pub(crate) findings: Vec<usize>,
}

/// By input (in input order), and by server address and path (in order of their names).
pub(crate) fn rollups(
    rep: &Report,
    sel: &Selection,
    shown: &[usize],
) -> (Vec<Rollup>, Vec<Rollup>) {
    let mut by_input: BTreeMap<u32, Rollup> = BTreeMap::new();
    let mut by_server: BTreeMap<String, Rollup> = BTreeMap::new();
    let mut path_of: BTreeMap<usize, String> = BTreeMap::new();
    let input_path = |input: u32| {
        rep.inputs
            .iter()
            .find(|i| i.index == input)
            .map_or_else(|| format!("input {input}"), |i| i.path.clone())
    };
    for h in rep.selected_headers(sel) {
        // A session counts once at every input and server it was seen at (its vantage points).
        let mut seen: Vec<(u32, std::net::SocketAddr)> = h
            .vantage_points
            .iter()
            .map(|v| (v.input, v.server))
            .collect();
        if seen.is_empty() {
            seen.push((h.head.start.frame.input, h.head.server));
        }
        let mut inputs: Vec<u32> = seen.iter().map(|v| v.0).collect();
        inputs.sort_unstable();
        inputs.dedup();
        for input in inputs {
            by_input
                .entry(input)
                .or_insert_with(|| Rollup::new(input_path(input), Some(input)))
                .sessions += 1;
        }
        let mut servers: Vec<String> = seen
            .iter()
            .map(|v| format!("{} {}", v.1, h.head.path))
            .collect();
        servers.sort_unstable();
        servers.dedup();
        for server in servers {
            by_server
                .entry(server.clone())
                .or_insert_with(|| Rollup::new(server, None))
                .sessions += 1;
        }
        path_of.insert(h.head.idx, h.head.path.clone());
    }
    // A finding counts where it was seen: its own vantage point's input and server.
    for &p in shown {
        let f = &rep.findings[p];
        let Some(path) = path_of.get(&f.session) else {
            continue;
        };
        let server = format!("{} {path}", f.vantage.server);
        by_input
            .entry(f.vantage.input)
            .and_modify(|r| r.findings.push(p));
        by_server.entry(server).and_modify(|r| r.findings.push(p));
    }
    (
        by_input.into_values().collect(),
        by_server.into_values().collect(),
    )
}

impl Rollup {
    fn new(name: String, input: Option<u32>) -> Rollup {
        Rollup {
            name,
            input,
            sessions: 0,
            findings: Vec::new(),
        }
    }
}
