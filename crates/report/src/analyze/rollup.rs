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
    let mut of_session: BTreeMap<usize, (u32, String)> = BTreeMap::new();
    for h in rep.selected_headers(sel) {
        let input = h.head.start.frame.input;
        let server = format!("{} {}", h.head.server, h.head.path);
        let path = rep
            .inputs
            .iter()
            .find(|i| i.index == input)
            .map_or_else(|| format!("input {input}"), |i| i.path.clone());
        by_input
            .entry(input)
            .or_insert_with(|| Rollup::new(path, Some(input)))
            .sessions += 1;
        by_server
            .entry(server.clone())
            .or_insert_with(|| Rollup::new(server.clone(), None))
            .sessions += 1;
        of_session.insert(h.head.idx, (input, server));
    }
    for &p in shown {
        if let Some((input, server)) = of_session.get(&rep.findings[p].session) {
            by_input.entry(*input).and_modify(|r| r.findings.push(p));
            by_server
                .entry(server.clone())
                .and_modify(|r| r.findings.push(p));
        }
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
