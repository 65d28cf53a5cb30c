//! The clock offset between two inputs, from every session they share. Each comparison of two
//! observations bounds the far input's clock minus the near one's by causality (a request
//! reaches the far leg after the near one, a response byte the near leg after the far one);
//! bounds from several sessions hold together, so they are intersected.

use std::collections::BTreeMap;

use mcpf_model::InputId;

use super::lost_in_transit::Offset;
use serde::Serialize;

/// The far input's clock minus the near input's, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClockOffset {
    /// Nearer the server.
    pub far_input: InputId,
    /// Nearer the client.
    pub near_input: InputId,
    /// The middle of the bounds, when both are known and do not cross.
    pub estimate: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub from_exchanges: usize,
    /// The comparisons of two observations of one session that bounded it.
    pub from_sessions: usize,
}

#[derive(Debug, Default)]
pub(crate) struct Clocks(BTreeMap<(InputId, InputId), (Offset, usize)>);

impl Clocks {
    /// One comparison's bounds on the far input's clock against the near one's.
    pub(crate) fn add(&mut self, far: InputId, near: InputId, o: Offset) {
        if !o.low.is_finite() && !o.high.is_finite() {
            return;
        }
        let (b, sessions) = self
            .0
            .entry((far, near))
            .or_insert((Offset::unbounded(), 0));
        b.intersect(o);
        *sessions += 1;
    }

    pub(crate) fn list(&self) -> Vec<ClockOffset> {
        let r = |x: f64| x.is_finite().then(|| (x * 1e6).round() / 1e6);
        self.0
            .iter()
            .map(|(&(far, near), (b, sessions))| ClockOffset {
                far_input: far,
                near_input: near,
                estimate: b.estimate().and_then(r),
                min: r(b.low),
                max: r(b.high),
                from_exchanges: b.exchanges,
                from_sessions: *sessions,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_from_several_sessions_are_intersected() {
        let mut c = Clocks::default();
        let bounds = |low, high, exchanges| Offset {
            low,
            high,
            exchanges,
        };
        c.add(1, 0, bounds(-0.002, 0.010, 5));
        c.add(1, 0, bounds(0.001, 0.004, 3));
        let o = &c.list()[0];
        assert_eq!(
            (o.min, o.max, o.from_exchanges, o.from_sessions),
            (Some(0.001), Some(0.004), 8, 2)
        );
        assert_eq!(o.estimate, Some(0.0025));
        // Bounds that cross give no estimate (the clocks drifted, or the legs are not what
        // they seem).
        c.add(1, 0, bounds(0.005, 0.006, 1));
        assert_eq!(c.list()[0].estimate, None);
    }
}
