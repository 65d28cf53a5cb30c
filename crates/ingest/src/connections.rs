//! The connections of a HAR file or access log. An entry or line names the connection it used (a
//! HAR `connection`, a logged connection id or client port) or nothing; exchanges are numbered
//! by that name, and each connection gets a `ConnectionStart` at its first exchange's start and
//! a `ConnectionEnd` at its last exchange's end, as TCP connections do.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use mcpf_http::{ConnKind, ExchangeId, HttpEvent};
use mcpf_model::{ConnId, InputId, Mark};

use crate::timeline::Timeline;

/// Gives exchanges their ids, in start order.
pub(crate) struct Connections {
    input: InputId,
    /// Connection number and the index of its next exchange, by name.
    named: HashMap<String, (u64, u32)>,
    next: u64,
}

impl Connections {
    pub(crate) fn new(input: InputId) -> Connections {
        Connections {
            input,
            named: HashMap::new(),
            next: 0,
        }
    }

    /// The id of the next exchange on the connection `name`; without a name, the exchange is
    /// alone on a connection of its own. `first` (the log says this is the first request of
    /// its connection) starts a new connection when the name has been used already: servers
    /// reuse connection numbers.
    pub(crate) fn exchange(&mut self, name: Option<&str>, first: bool) -> ExchangeId {
        let Some(name) = name else {
            self.next += 1;
            return ExchangeId {
                conn: ConnId::recorded(self.input, self.next - 1),
                index: 0,
            };
        };
        if first && self.named.get(name).is_some_and(|c| c.1 > 0) {
            self.named.remove(name);
        }
        let next = &mut self.next;
        let slot = self.named.entry(name.to_string()).or_insert_with(|| {
            *next += 1;
            (*next - 1, 0)
        });
        let id = ExchangeId {
            conn: ConnId::recorded(self.input, slot.0),
            index: slot.1,
        };
        slot.1 += 1;
        id
    }

    /// Whether some exchange named its connection.
    pub(crate) fn any_named(&self) -> bool {
        !self.named.is_empty()
    }
}

/// Pushes a `ConnectionStart` for each connection, at the first of its exchanges: `starts` are
/// `(connection, client, server, start of the exchange)` in start order.
pub(crate) fn push_starts(
    timeline: &mut Timeline,
    starts: impl IntoIterator<Item = (ConnId, SocketAddr, SocketAddr, Mark)>,
) {
    let mut started = HashSet::new();
    for (conn, client, server, mark) in starts {
        if started.insert(conn) {
            timeline.push(
                mark.time,
                HttpEvent::ConnectionStart {
                    conn,
                    client,
                    server,
                    mark,
                },
            );
        }
    }
}

/// The latest end of each connection's exchanges, with the addresses of its first.
#[derive(Default)]
pub(crate) struct Ends(HashMap<ConnId, (SocketAddr, SocketAddr, Mark)>);

impl Ends {
    pub(crate) fn note(
        &mut self,
        conn: ConnId,
        client: SocketAddr,
        server: SocketAddr,
        last: Mark,
    ) {
        let slot = self.0.entry(conn).or_insert((client, server, last));
        if last.time >= slot.2.time {
            slot.2 = last;
        }
    }

    /// Pushes a `ConnectionEnd` per connection, in connection order.
    pub(crate) fn push(self, timeline: &mut Timeline) {
        let mut ends: Vec<_> = self.0.into_iter().collect();
        ends.sort_by_key(|(c, _)| *c);
        for (conn, (client, server, mark)) in ends {
            timeline.push(
                mark.time,
                HttpEvent::ConnectionEnd {
                    conn,
                    client,
                    server,
                    kind: ConnKind::Http,
                    mark,
                    packets: 0,
                    frame_bytes: 0,
                },
            );
        }
    }
}
