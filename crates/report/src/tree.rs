//! The order the terminal reports list a session's findings in: each root cause first, its
//! consequences indented under it. The links are the findings' own `caused_by`; the layout is
//! the same for a live report and a saved one.

use mcpf_detect::Severity;

/// A finding as the tree needs it.
pub(crate) struct Node<T: Ord> {
    pub severity: Severity,
    /// What orders siblings: the finding's time (then its position, to be total).
    pub when: T,
    /// Its causes, as positions in the same slice; those not in it are ignored.
    pub causes: Vec<usize>,
}

/// A finding placed in the tree.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Its position in the slice given.
    pub at: usize,
    /// 0 for a root cause, 1 for what it caused, ...
    pub depth: usize,
    /// Its causes other than the one it is drawn under (a consequence of two findings is drawn
    /// once, under the first; the line names the others).
    pub also_follows: Vec<usize>,
}

/// The findings in tree order: each drawn once, under its first cause present; the roots (no
/// cause present, or caught in a cycle no link should make) ordered by the worst severity
/// under them, then by time, so the chain that matters most comes first; siblings by time.
pub(crate) fn causal_order<T: Ord>(nodes: &[Node<T>]) -> Vec<Placed> {
    let present = |c: &usize| *c < nodes.len();
    let parent: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| n.causes.iter().copied().find(present))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, p) in parent.iter().enumerate() {
        if let Some(p) = p {
            children[*p].push(i);
        }
    }
    for c in &mut children {
        c.sort_by(|&a, &b| nodes[a].when.cmp(&nodes[b].when));
    }
    let worst = worst_below(nodes, &children);
    let mut roots: Vec<usize> = (0..nodes.len()).filter(|&i| parent[i].is_none()).collect();
    roots.sort_by(|&a, &b| (worst[a], &nodes[a].when).cmp(&(worst[b], &nodes[b].when)));
    let mut out = Vec::with_capacity(nodes.len());
    let mut placed = vec![false; nodes.len()];
    let visit = |root: usize, out: &mut Vec<Placed>, placed: &mut Vec<bool>| {
        // Depth first, iteratively: a chain as long as the findings cannot overflow the stack.
        let mut stack = vec![(root, 0usize)];
        while let Some((i, depth)) = stack.pop() {
            if std::mem::replace(&mut placed[i], true) {
                continue;
            }
            let mut also_follows: Vec<usize> = nodes[i]
                .causes
                .iter()
                .copied()
                .filter(|c| present(c) && Some(*c) != parent[i])
                .collect();
            also_follows.sort_unstable();
            also_follows.dedup();
            out.push(Placed {
                at: i,
                depth,
                also_follows,
            });
            stack.extend(children[i].iter().rev().map(|&c| (c, depth + 1)));
        }
    };
    for root in roots {
        visit(root, &mut out, &mut placed);
    }
    // A cycle has no root: its findings are still listed, each from the earliest.
    let mut rest: Vec<usize> = (0..nodes.len()).filter(|&i| !placed[i]).collect();
    rest.sort_by(|&a, &b| nodes[a].when.cmp(&nodes[b].when));
    for i in rest {
        visit(i, &mut out, &mut placed);
    }
    out
}

/// The worst severity of each finding and everything drawn under it.
fn worst_below<T: Ord>(nodes: &[Node<T>], children: &[Vec<usize>]) -> Vec<Severity> {
    let mut worst: Vec<Severity> = nodes.iter().map(|n| n.severity).collect();
    // Relaxed until nothing changes: at most as many rounds as the deepest chain, and a cycle
    // cannot make it loop (a severity only ever gets worse, and there are five).
    let mut changed = true;
    while changed {
        changed = false;
        for (i, kids) in children.iter().enumerate() {
            if let Some(w) = kids.iter().map(|&c| worst[c]).min()
                && w < worst[i]
            {
                worst[i] = w;
                changed = true;
            }
        }
    }
    worst
}

/// How far a finding at `depth` is indented: two columns a level, no deeper than six levels,
/// so a long chain still leaves the line its width.
pub(crate) fn indent(depth: usize) -> usize {
    2 * depth.min(6)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(severity: Severity, when: u32, causes: &[usize]) -> Node<u32> {
        Node {
            severity,
            when,
            causes: causes.to_vec(),
        }
    }

    fn order(nodes: &[Node<u32>]) -> Vec<(usize, usize)> {
        causal_order(nodes)
            .into_iter()
            .map(|p| (p.at, p.depth))
            .collect()
    }

    #[test]
    fn the_seed_chain_reads_from_its_root_cause_down() {
        use Severity::*;
        // lost_in_transit → sse_fallback → {event_id_reset, unsafe_resumption} → replay
        // → {duplicate, skipped → unanswered}
        let nodes = [
            node(High, 0, &[]),         // 0 lost_in_transit
            node(Info, 1, &[0]),        // 1 sse_fallback
            node(High, 2, &[1]),        // 2 event_id_reset
            node(High, 5, &[1]),        // 3 unsafe_resumption_after_fallback
            node(Critical, 6, &[2, 3]), // 4 cross_namespace_replay
            node(High, 6, &[4]),        // 5 duplicate_response
            node(High, 7, &[4]),        // 6 skipped_events
            node(High, 9, &[6]),        // 7 unanswered_request
        ];
        assert_eq!(
            order(&nodes),
            [
                (0, 0),
                (1, 1),
                (2, 2),
                (4, 3),
                (5, 4),
                (6, 4),
                (7, 5),
                (3, 2)
            ]
        );
        let placed = causal_order(&nodes);
        let replay = placed.iter().find(|p| p.at == 4).unwrap();
        assert_eq!(replay.also_follows, [3]);
    }

    #[test]
    fn roots_come_worst_chain_first_then_by_time() {
        use Severity::*;
        let nodes = [
            node(Info, 0, &[]),
            node(Medium, 1, &[]),
            node(Info, 2, &[]),
            node(Critical, 3, &[2]),
        ];
        assert_eq!(order(&nodes), [(2, 0), (3, 1), (1, 0), (0, 0)]);
    }

    #[test]
    fn a_cause_not_listed_leaves_its_consequence_a_root_and_a_cycle_is_still_listed() {
        use Severity::*;
        let nodes = [node(High, 0, &[7]), node(Low, 1, &[2]), node(Low, 2, &[1])];
        let got = order(&nodes);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], (0, 0));
        assert_eq!(got[1..], [(1, 0), (2, 1)]);
    }

    #[test]
    fn indentation_stops_growing_at_six_levels() {
        assert_eq!(indent(0), 0);
        assert_eq!(indent(3), 6);
        assert_eq!(indent(9), 12);
    }
}
