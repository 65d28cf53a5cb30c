//! MCP streams that nothing has tied to a session yet: a response or event stream whose
//! request the capture missed and whose connection carried nothing else of a session (a
//! capture started mid-stream). A later resume whose `Last-Event-ID` names an event one of them
//! delivered proves which session it belongs to; the rest stay unattributed and are counted.

use mcpf_model::WireMap;

use crate::model::Stream;

/// Streams held at most; more are counted as unattributed at once.
const MAX_STREAMS: usize = 4096;

#[derive(Default)]
pub(super) struct Pool {
    streams: Vec<Option<Stream>>,
    /// Event ID → the streams that delivered it.
    by_event_id: WireMap<String, Vec<usize>>,
    held: usize,
}

impl Pool {
    /// Holds a stream; false (and the stream dropped) when the pool is full.
    pub(super) fn hold(&mut self, stream: Stream) -> bool {
        if self.held >= MAX_STREAMS {
            return false;
        }
        let at = self.streams.len();
        for ev in stream.packed.events() {
            if let Some(id) = ev.id.as_deref().filter(|i| !i.is_empty()) {
                let slots = self.by_event_id.entry(id.to_string()).or_default();
                if !slots.contains(&at) {
                    slots.push(at);
                }
            }
        }
        self.streams.push(Some(stream));
        self.held += 1;
        true
    }

    /// The streams that delivered event `id`, taken out of the pool.
    pub(super) fn claim(&mut self, id: &str) -> Vec<Stream> {
        let Some(slots) = self.by_event_id.remove(id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for at in slots {
            if let Some(stream) = self.streams.get_mut(at).and_then(Option::take) {
                self.held -= 1;
                out.push(stream);
            }
        }
        out
    }

    /// Every stream still held.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = Stream> + '_ {
        self.by_event_id.clear();
        self.held = 0;
        self.streams.drain(..).flatten()
    }
}
