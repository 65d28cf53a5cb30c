//! The report as one self-contained HTML file: no network fetch, no external script, style or
//! font. For each session with findings, a swimlane view (a lane per stream, time flowing down,
//! events as marks; the fallback, the drop, the resume and the replay drawn as arrows crossing
//! lanes), then the findings as anchors with their evidence (frames, event IDs, request IDs).
//!
//! Rendered from the JSON document (read as a [`Document`]) like the Markdown, so `report FILE.json --format html` draws
//! the same. Every string from a capture is HTML-escaped; the one script only highlights what an
//! anchor names and records errors for the browser test.

use std::io::{self, Write};

use mcpf_detect::Evidence;

use crate::doc::{Doc, seconds};
use crate::document::{Document, Finding, Session, Stream, TimelineEntry};
use crate::layout::{Anchor, Layout};
use crate::markdown::{TIMELINE_ROWS, clock};

/// Lane geometry (SVG user units).
const LANE_W: f64 = 150.0;
const LEFT: f64 = 90.0;
const TOP: f64 = 60.0;
const HEIGHT: f64 = 640.0;
/// Lanes drawn at most per session: a session of thousands of streams is summarised.
const MAX_LANES: usize = 40;
/// Runs of events and findings drawn at most per session (the rest are counted): every label is
/// placed clear of those before it, so drawing stays bounded in what is shown.
const MAX_MARKS: usize = 400;
const MAX_FINDING_MARKS: usize = 100;
/// Font sizes of the labels (SVG user units), written on each text: the layout measures by them.
const HEAD: f64 = 12.0;
const SMALL: f64 = 11.0;
const EVENT: f64 = 10.0;
/// How wide a label may be: a lane's for what sits in a lane, about two lanes for a finding's
/// or a resume's (a finding kind's name fits).
const IN_LANE: f64 = LANE_W - 10.0;
const ACROSS: f64 = 2.0 * LANE_W;

pub fn write_html(out: &mut dyn Write, doc: &Document) -> io::Result<()> {
    let d = Doc::new(doc);
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    )?;
    // Only the page's own script may run, named by its hash: nothing from a capture can.
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src '{}'\">",
        script_hash()
    )?;
    writeln!(
        out,
        "<title>MCP incident report</title>\n<style>{STYLE}</style></head><body>"
    )?;
    let labelled = d.inputs().count() > 1;
    let inputs: Vec<String> = d
        .inputs()
        .enumerate()
        .map(|(i, p)| match labelled {
            true => format!("{} {}", crate::input_label(i as u32), esc(p)),
            false => esc(p),
        })
        .collect();
    writeln!(
        out,
        "<h1>MCP incident report</h1>\n<p class=\"meta\">{} {} · {}</p>",
        esc(doc.tool.name.as_deref().unwrap_or("mcp-forensics")),
        esc(doc.tool.version.as_deref().unwrap_or("")),
        inputs.join(", ")
    )?;
    write_verdict(out, &d)?;
    for s in d.sessions_with_findings() {
        write_session(out, &d, s)?;
    }
    writeln!(out, "<script>{SCRIPT}</script></body></html>")
}

fn write_verdict(out: &mut dyn Write, d: &Doc<'_>) -> io::Result<()> {
    writeln!(out, "<h2>Verdict</h2><ul class=\"verdict\">")?;
    let lines = d.verdicts();
    if lines.is_empty() {
        writeln!(out, "<li>{}</li>", esc(&d.nothing_above_info()))?;
    }
    for v in lines {
        writeln!(
            out,
            "<li><b>{}</b> <span class=\"sev {}\">{}</span> {}</li>",
            esc(&v.session),
            esc(v.severity.name()),
            esc(&v.severity.name().to_uppercase()),
            esc(&v.text)
        )?;
    }
    writeln!(out, "</ul>")
}

fn write_session(out: &mut dyn Write, d: &Doc<'_>, s: &Session) -> io::Result<()> {
    let key = &s.key;
    writeln!(
        out,
        "<section class=\"session\" id=\"{k}\"><h2>Session {k} <code>{}</code> {} {}</h2>",
        esc(s.session_id.as_deref().unwrap_or("")),
        esc(&s.server),
        esc(&s.endpoint),
        k = esc(key)
    )?;
    write_swimlanes(out, d, s)?;
    write_findings(out, d, key)?;
    if let Some((kind, fix)) = d.what_to_do(key) {
        writeln!(
            out,
            "<h3>What to do</h3><p class=\"fix\">{} <span class=\"meta\">(<code>mcp-forensics explain {}</code>)</span></p>",
            esc(fix),
            esc(&kind)
        )?;
    }
    write_timeline(out, d, key)?;
    writeln!(out, "</section>")
}

/// The session's condensed timeline as the Markdown report lists it: a row per request,
/// response, run of events, stream end and finding, the findings placed on their rows linked to
/// their evidence, the first [`TIMELINE_ROWS`] rows at most.
fn write_timeline(out: &mut dyn Write, d: &Doc<'_>, key: &str) -> io::Result<()> {
    let rows: Vec<&TimelineEntry> = d.timeline_of(key).collect();
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "<h3>Timeline, UTC</h3><table class=\"timeline\"><tr><th>time</th><th>frame</th><th></th><th>what</th></tr>"
    )?;
    for e in rows.iter().take(TIMELINE_ROWS) {
        let findings: Vec<String> = e
            .findings
            .iter()
            .map(|f| format!("<a href=\"#{0}\">{0}</a> ", esc(f)))
            .collect();
        writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td></tr>",
            esc(&e.kind),
            esc(&clock(&e.time)),
            esc(&d.record_ref(u64::from(e.input), e.frame)),
            esc(&e.direction),
            findings.join(""),
            esc(&e.summary)
        )?;
    }
    writeln!(out, "</table>")?;
    if rows.len() > TIMELINE_ROWS {
        writeln!(
            out,
            "<p class=\"meta\">{} more rows: <code>--format json</code> has them all.</p>",
            rows.len() - TIMELINE_ROWS
        )?;
    }
    Ok(())
}

/// The streams a session's lanes show: those its findings and resumes name, its GET streams,
/// and its first (the initialize); the rest are counted.
fn named_streams<'a>(d: &Doc<'a>, s: &'a Session) -> Vec<&'a str> {
    let mut named: Vec<&str> = Vec::new();
    for f in d.findings_of(&s.key) {
        named.extend(f.streams.iter().map(String::as_str));
    }
    for (i, st) in s.streams.iter().enumerate() {
        if i == 0 || st.transport == "get" || st.resume.is_some() {
            named.push(&st.id);
        }
        if let Some(c) = st.resume.as_ref().and_then(|r| r.continues.as_deref()) {
            named.push(c);
        }
    }
    named
}

/// Where things are drawn: a lane per stream, a time scale from the session's start to its end,
/// and the labels placed so far (a label is moved down past those it would cover).
struct Scale<'a> {
    lanes: Vec<&'a str>,
    t0: f64,
    t1: f64,
    layout: Layout,
}

impl Scale<'_> {
    /// A `<text>` of `text` at `x` wanting its baseline at `y`, placed clear of the labels
    /// before it, with a leader line from `mark` when it had to move away from it; empty for an
    /// empty text. Event IDs keep to their lane; a finding's or a resume's label may cross one.
    fn label(&mut self, text: &str, size: f64, x: f64, y: f64, mark: (f64, f64)) -> String {
        let max = if size < SMALL { IN_LANE - 4.0 } else { ACROSS };
        let Some(p) = self.layout.place(text, size, Anchor::Start, x, y, max) else {
            return String::new();
        };
        let leader = match p.moved > 1.0 {
            true => format!(
                "<line class=\"leader\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>",
                mark.0,
                mark.1,
                p.y - size * 0.35
            ),
            false => String::new(),
        };
        format!(
            "{leader}<text x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{size}\">{}</text>",
            p.y,
            esc(&p.text)
        )
    }

    /// A `<text>` centred on `x` at baseline `y` (or below, clear of the others), as wide as a
    /// lane at most.
    fn centred(&mut self, class: &str, text: &str, size: f64, x: f64, y: f64) -> String {
        let Some(p) = self.layout.place(text, size, Anchor::Middle, x, y, IN_LANE) else {
            return String::new();
        };
        format!(
            "<text class=\"{class}\" x=\"{x:.1}\" y=\"{:.1}\" font-size=\"{size}\">{}</text>",
            p.y,
            esc(&p.text)
        )
    }

    /// A note in the margin below, clear of every label.
    fn note(&mut self, text: &str) -> String {
        let y = (TOP + HEIGHT + 26.0).max(self.layout.bottom() + SMALL + 4.0);
        match self
            .layout
            .place(text, SMALL, Anchor::Start, LEFT, y, f64::INFINITY)
        {
            Some(p) => format!(
                "<text class=\"axis\" x=\"{LEFT}\" y=\"{:.1}\" font-size=\"{SMALL}\">{}</text>",
                p.y,
                esc(&p.text)
            ),
            None => String::new(),
        }
    }

    /// The drawing's size: the lanes', or more when labels reach past them.
    fn size(&self) -> (f64, f64) {
        let width = LEFT + LANE_W * self.lanes.len() as f64 + 20.0;
        let height = TOP + HEIGHT + 40.0;
        (
            width.max(self.layout.right() + 10.0).ceil(),
            height.max(self.layout.bottom() + 10.0).ceil(),
        )
    }

    fn x(&self, stream: &str) -> Option<f64> {
        let i = self.lanes.iter().position(|l| *l == stream)?;
        Some(LEFT + LANE_W * i as f64 + LANE_W / 2.0)
    }

    fn y(&self, time: &str) -> f64 {
        let t = seconds(time);
        let span = (self.t1 - self.t0).max(1e-6);
        TOP + ((t - self.t0) / span).clamp(0.0, 1.0) * HEIGHT
    }
}

fn write_swimlanes(out: &mut dyn Write, d: &Doc<'_>, s: &Session) -> io::Result<()> {
    let all = &s.streams;
    let named = named_streams(d, s);
    let streams: Vec<&Stream> = all
        .iter()
        .filter(|st| named.contains(&st.id.as_str()))
        .take(MAX_LANES)
        .collect();
    let mut scale = Scale {
        lanes: streams.iter().map(|st| st.id.as_str()).collect(),
        t0: seconds(&s.start),
        t1: seconds(&s.end),
        layout: Layout::default(),
    };
    // Placed from the most telling to the least (the lanes and the axis, the findings, the
    // resumes, the runs of events), so a label that has to move is a less telling one; drawn
    // the other way round, so the findings are on top.
    let mut lanes = Vec::new();
    write_time_axis(&mut lanes, &mut scale, s)?;
    for st in &streams {
        write_lane(&mut lanes, &mut scale, st)?;
    }
    let findings: Vec<&Finding> = d.findings_of(&s.key).collect();
    let mut marks = Vec::new();
    for f in findings.iter().take(MAX_FINDING_MARKS) {
        write_finding_mark(&mut marks, &mut scale, &streams, f)?;
    }
    let mut resumes = Vec::new();
    for st in &streams {
        write_resume_arrow(&mut resumes, &mut scale, st)?;
    }
    let events: Vec<&TimelineEntry> = d
        .timeline_of(&s.key)
        .filter(|e| e.kind == "events")
        .collect();
    let mut runs = Vec::new();
    for e in events.iter().take(MAX_MARKS) {
        write_event_mark(&mut runs, &mut scale, e)?;
    }
    let mut notes = String::new();
    for (n, what) in [
        (
            findings.len().saturating_sub(MAX_FINDING_MARKS),
            "findings not drawn (the table lists them)",
        ),
        (
            events.len().saturating_sub(MAX_MARKS),
            "more runs of events in the timeline not drawn",
        ),
        (
            all.len() - streams.len(),
            "other streams of the session (no finding names them) not drawn",
        ),
    ] {
        if n > 0 {
            notes.push_str(&scale.note(&format!("{n} {what}")));
        }
    }
    let (width, height) = scale.size();
    writeln!(
        out,
        "<svg class=\"lanes\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-label=\"streams of {}\">",
        esc(&s.key)
    )?;
    writeln!(
        out,
        "<defs><marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\"/></marker></defs>"
    )?;
    for part in [lanes, runs, resumes, marks] {
        out.write_all(&part)?;
    }
    writeln!(out, "{notes}</svg>")
}

fn write_time_axis(out: &mut dyn Write, scale: &mut Scale<'_>, s: &Session) -> io::Result<()> {
    for (label, t) in [("start", &s.start), ("end", &s.end)] {
        let y = scale.y(t) + 4.0;
        let text = format!("{label} {}", clock(t));
        let Some(p) = scale.layout.place(
            &text,
            SMALL,
            Anchor::Start,
            4.0,
            y,
            LEFT + LANE_W / 2.0 - 12.0,
        ) else {
            continue;
        };
        writeln!(
            out,
            "<text class=\"axis\" x=\"4\" y=\"{:.1}\" font-size=\"{SMALL}\">{}</text>",
            p.y,
            esc(&p.text)
        )?;
    }
    Ok(())
}

fn write_lane(out: &mut dyn Write, scale: &mut Scale<'_>, st: &Stream) -> io::Result<()> {
    let id = st.id.as_str();
    let Some(x) = scale.x(id) else {
        return Ok(());
    };
    let y0 = scale.y(&st.opened);
    // An exchange of a millisecond still shows as a stroke.
    let y1 = st
        .ended
        .as_deref()
        .map_or(TOP + HEIGHT, |t| scale.y(t))
        .max(y0 + 6.0);
    let outcome = st.outcome.as_deref().unwrap_or("open");
    let methods = st.methods.join(" ");
    // The head and the methods as wide as the lane at most; the title has them whole.
    let head = scale.centred("head", id, HEAD, x, 20.0);
    let sub = scale.centred("sub", &methods, SMALL, x, 36.0);
    writeln!(
        out,
        "<g class=\"lane {o}\" data-stream=\"{s}\">{head}{sub}<line x1=\"{x:.1}\" y1=\"{y0:.1}\" x2=\"{x:.1}\" y2=\"{y1:.1}\"/><title>{s} {method} {target} {m}: {n} events, {o}</title></g>",
        o = esc(outcome),
        s = esc(id),
        m = esc(&methods),
        method = esc(&st.method),
        target = esc(&st.target),
        n = st.events,
    )?;
    if st.ended.is_some() && matches!(outcome, "reset" | "closed_early" | "gap") {
        writeln!(
            out,
            "<g class=\"drop\" data-stream=\"{}\"><path d=\"M{:.1},{:.1}l-6,-6m6,6l6,-6m-6,6l-6,6m6,-6l6,6\"/><title>{} by {}</title></g>",
            esc(id),
            x,
            y1,
            esc(outcome),
            esc(st.closed_by.as_deref().unwrap_or("?")),
        )?;
    }
    Ok(())
}

/// A timeline row of events on a stream: a mark at its time, with the event IDs.
fn write_event_mark(
    out: &mut dyn Write,
    scale: &mut Scale<'_>,
    e: &TimelineEntry,
) -> io::Result<()> {
    if e.kind != "events" {
        return Ok(());
    }
    let Some(x) = e.stream.as_deref().and_then(|s| scale.x(s)) else {
        return Ok(());
    };
    let y = scale.y(&e.time);
    let ids = match &e.event_ids {
        Some((a, b)) if a == b => a.clone(),
        Some((a, b)) => format!("{a}–{b}"),
        None => String::new(),
    };
    let text = scale.label(&ids, EVENT, x + 7.0, y + 4.0, (x, y));
    writeln!(
        out,
        "<g class=\"event\"><circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\"/>{text}<title>{} {} {}</title></g>",
        esc(&ids),
        esc(&clock(&e.time)),
        esc(&e.summary)
    )
}

/// A resume: from the stream whose `Last-Event-ID` it names to the resuming stream.
fn write_resume_arrow(out: &mut dyn Write, scale: &mut Scale<'_>, st: &Stream) -> io::Result<()> {
    let Some(r) = &st.resume else {
        return Ok(());
    };
    let (Some(from), Some(to)) = (
        r.continues.as_deref().and_then(|c| scale.x(c)),
        scale.x(&st.id),
    ) else {
        return Ok(());
    };
    let y = scale.y(&st.opened);
    let label = format!("resume Last-Event-ID {}", r.last_event_id);
    let lx = from.min(to) + 6.0;
    let text = scale.label(&label, SMALL, lx, y - 18.0, (lx, y - 14.0));
    writeln!(
        out,
        "<g class=\"arrow resume\" data-stream=\"{}\"><path d=\"M{from:.1},{:.1}L{to:.1},{y:.1}\" marker-end=\"url(#head)\"/>{text}<title>{}</title></g>",
        esc(&st.id),
        y - 14.0,
        esc(&label),
    )
}

/// A finding: an arrow across the lanes of the streams it names when it names several (the
/// fallback, the replay), from the one opened first to the one opened last (time flows down);
/// else a mark on its stream. Each is a link to its evidence.
fn write_finding_mark(
    out: &mut dyn Write,
    scale: &mut Scale<'_>,
    streams: &[&Stream],
    f: &Finding,
) -> io::Result<()> {
    let opened = |id: &str| {
        streams
            .iter()
            .find(|st| st.id == id)
            .map_or(0.0, |st| seconds(&st.opened))
    };
    let mut lanes: Vec<(f64, f64)> = f
        .streams
        .iter()
        .filter_map(|s| Some((opened(s), scale.x(s)?)))
        .collect();
    lanes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (Some(&(_, mut first)), Some(&(_, last))) = (lanes.first(), lanes.last()) else {
        return Ok(());
    };
    // A replay is drawn from the stream whose events it replayed to the resume.
    if let Some(Evidence::CrossNamespaceReplay(e)) = &f.evidence
        && let Some(x) = e.replayed_from.as_deref().and_then(|s| scale.x(s))
    {
        first = x;
    }
    let id = esc(&f.id);
    let kind = esc(f.kind.name());
    let sev = esc(f.severity_name());
    let y = scale.y(&f.time);
    let title = format!("{id} {} {kind}: {}", sev.to_uppercase(), esc(&f.summary));
    let label = format!("{} {}", f.id, f.kind.name());
    if (first - last).abs() > 1.0 {
        let lx = first.min(last) + 6.0;
        let text = scale.label(&label, SMALL, lx, y - 5.0, (lx, y));
        writeln!(
            out,
            "<a href=\"#{id}\"><g class=\"arrow finding {sev}\" data-finding=\"{id}\" data-kind=\"{kind}\"><path d=\"M{first:.1},{y:.1}L{last:.1},{y:.1}\" marker-end=\"url(#head)\"/>{text}<title>{title}</title></g></a>",
        )
    } else {
        let text = scale.label(&label, SMALL, first + 10.0, y + 5.0, (first, y));
        writeln!(
            out,
            "<a href=\"#{id}\"><g class=\"mark finding {sev}\" data-finding=\"{id}\" data-kind=\"{kind}\"><path d=\"M{first:.1},{:.1}l7,12h-14z\"/>{text}<title>{title}</title></g></a>",
            y - 6.0,
        )
    }
}

fn write_findings(out: &mut dyn Write, d: &Doc<'_>, key: &str) -> io::Result<()> {
    writeln!(
        out,
        "<h3>Findings, worst first</h3><table class=\"findings\"><tr><th>ID</th><th>severity</th><th>kind</th><th>time (UTC)</th><th>cause</th><th>what</th><th>evidence</th></tr>"
    )?;
    for f in d.worst_first(key) {
        let id = esc(&f.id);
        let causes: Vec<String> = f
            .caused_by
            .iter()
            .map(|c| format!("<a href=\"#{0}\">{0}</a>", esc(c)))
            .collect();
        // A capture's frames by their Wireshark filter; a log's lines and a HAR's entries by
        // their numbers.
        let mut places: Vec<String> = Vec::new();
        if let Some(filter) = d.display_filter(f) {
            places.push(format!("Wireshark: <code>{}</code>", esc(&filter)));
        }
        if let Some(records) = d.other_records(f) {
            places.push(esc(&records));
        }
        // The typed evidence written again: the report's object, field for field.
        let evidence = serde_json::to_string_pretty(&f.evidence).unwrap_or_default();
        writeln!(
            out,
            "<tr id=\"{id}\" class=\"{sev}\" data-finding=\"{id}\"><td><a href=\"#{id}\">{id}</a></td><td><span class=\"sev {sev}\">{}</span></td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"filter\">{}</div><details><summary>records, event IDs, request IDs</summary><pre>{}</pre></details></td></tr>",
            esc(&f.severity_name().to_uppercase()),
            esc(f.kind.name()),
            esc(&clock(&f.time)),
            causes.join(", "),
            esc(&f.summary),
            places.join("<br>"),
            esc(&evidence),
            sev = esc(f.severity_name()),
        )?;
    }
    writeln!(out, "</table>")
}

/// `sha256-…` of the page's script, as a Content-Security-Policy source.
fn script_hash() -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(SCRIPT.as_bytes());
    format!(
        "sha256-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// Text for HTML content and attribute values: escape sequences and bidi overrides shown as
/// the terminal report shows them, then the HTML metacharacters.
pub(crate) fn esc(text: &str) -> String {
    let text = crate::sanitize::terminal(text);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}code{font:12px ui-monospace,monospace}\
.meta{color:#666}.verdict li{margin:6px 0}\
.sev{font-weight:700;padding:0 4px;border-radius:3px}.sev.critical{background:#b00020;color:#fff}\
.sev.high{color:#b00020}.sev.medium{color:#a15c00}.sev.low{color:#006f8a}.sev.info{color:#777}\
svg.lanes{display:block;margin:12px 0;background:#fafafa;border:1px solid #ddd}\
.lane line{stroke:#555;stroke-width:3}.lane.reset line,.lane.closed_early line{stroke:#b00020}\
svg.lanes text{font-family:monospace;paint-order:stroke;stroke:#fafafa;stroke-width:3px;stroke-linejoin:round}.lane text{text-anchor:middle}.lane .sub{fill:#666}.leader{stroke:#bbb;stroke-width:1}\
.axis{fill:#666}.event circle{fill:#1f6feb}.event text{fill:#1f6feb}\
.drop path{stroke:#b00020;stroke-width:3;fill:none}\
.arrow path{stroke:#444;stroke-width:2;fill:none}\
.arrow.resume path{stroke:#7b3fbf;stroke-dasharray:5 3}.arrow.resume text{fill:#7b3fbf}\
.finding.critical path{stroke:#b00020;stroke-width:3}.finding.critical text{fill:#b00020;font-weight:700}\
.finding.high path{stroke:#d0453a}.mark path{fill:#d0453a;stroke:none}.mark.info path,.arrow.info path{stroke:#999;fill:#999}\
.hit path{stroke-width:5!important}tr.hit{outline:2px solid #1f6feb}\
table.findings,table.timeline{border-collapse:collapse;width:100%}table.findings td,table.findings th,table.timeline td,table.timeline th{border-top:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}\
table.timeline{font-size:13px}table.timeline td:nth-child(-n+3){white-space:nowrap;color:#555}table.timeline tr.finding{background:#fff4f2}\
pre{font-size:11px;max-height:240px;overflow:auto;background:#f4f4f4;padding:6px}";

/// Highlights what the address names (a finding's row and its marks), and records script
/// errors on the document for the browser test to read.
const SCRIPT: &str = "window.addEventListener('error',function(e){document.documentElement.dataset.errors=(document.documentElement.dataset.errors||'')+e.message+';'});\
function hit(){document.querySelectorAll('.hit').forEach(function(n){n.classList.remove('hit')});\
var id=location.hash.slice(1);if(!id)return;document.querySelectorAll('[data-finding=\"'+CSS.escape(id)+'\"]').forEach(function(n){n.classList.add('hit')});}\
window.addEventListener('hashchange',hit);hit();document.documentElement.dataset.rendered='1';";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_text_is_escaped_and_times_place_in_order() {
        assert_eq!(
            esc("<script>\"x\"&'"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;"
        );
        let a = seconds("2026-11-30T23:59:59.500000Z");
        let b = seconds("2026-12-01T00:00:00.250000Z");
        assert!(b > a && b - a < 1.0, "{a} {b}");
        assert_eq!(crate::doc::days_from_civil(1970, 1, 1), 0);
        assert_eq!(crate::doc::days_from_civil(2000, 3, 1), 11_017);
    }

    /// A session of two inputs with a finding of kind `kind` repeated `findings` times at one
    /// instant on one stream, and `rows` timeline rows, the first with hostile text.
    fn page(findings: usize, kind: &str, rows: usize) -> String {
        let t = "2026-11-30T04:36:07.294714Z";
        let fs: Vec<String> = (1..=findings)
            .map(|i| format!(r#"{{"id": "F{i}", "kind": "{kind}", "severity": "high", "session": "S1", "time": "{t}", "streams": ["post:s1"]}}"#))
            .collect();
        let es: Vec<String> = (0..rows)
            .map(|i| {
                let (summary, on) = match i {
                    0 => ("<script>alert(1)</script>", r#"["F1"]"#),
                    _ => ("POST tools/call #7", "[]"),
                };
                format!(r#"{{"time": "{t}", "frame": {i}, "input": 1, "session": "S1", "direction": "c→s", "kind": "request", "summary": "{summary}", "findings": {on}}}"#)
            })
            .collect();
        let json = format!(
            r#"{{"inputs": [{{"path": "a.pcap", "format": "pcap"}}, {{"path": "b.pcap", "format": "pcap"}}],
            "sessions": [{{"key": "S1", "start": "{t}", "end": "{t}",
              "streams": [{{"id": "post:s1", "transport": "post", "opened": "{t}"}}]}}],
            "findings": [{}], "timeline": [{}]}}"#,
            fs.join(","),
            es.join(",")
        );
        let doc = Document::from_json(json.as_bytes()).unwrap();
        let mut out = Vec::new();
        write_html(&mut out, &doc).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_timeline_is_text_escaped_linked_labelled_and_bounded() {
        let html = page(1, "duplicate_response", TIMELINE_ROWS + 5);
        let timeline = &html[html.find("<h3>Timeline").unwrap()..];
        assert!(timeline.contains(
            "<td>I2:0</td><td>c→s</td><td><a href=\"#F1\">F1</a> &lt;script&gt;alert(1)&lt;/script&gt;</td>"
        ));
        assert_eq!(
            timeline.matches("<tr class=\"request\">").count(),
            TIMELINE_ROWS
        );
        assert!(timeline.contains("5 more rows: <code>--format json</code> has them all"));
        assert!(html.contains("<tr id=\"F1\""), "the row the link names");
    }

    #[test]
    fn findings_at_one_instant_are_drawn_bounded_and_counted() {
        let html = page(MAX_FINDING_MARKS + 20, &"k".repeat(400), 0);
        let svg = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
        assert_eq!(
            svg.matches("class=\"mark finding").count(),
            MAX_FINDING_MARKS
        );
        assert!(svg.contains(">20 findings not drawn (the table lists them)</text>"));
        // Each label is cut to its width, and they stack: the drawing grew to hold them.
        let texts = svg
            .split("<text")
            .skip(1)
            .map(|t| &t[..t.find("</text>").unwrap()]);
        assert!(texts.clone().all(|t| !t.contains(&"k".repeat(60))));
        assert!(texts.clone().any(|t| t.contains(&"k".repeat(30))));
        let height: f64 = svg
            .split("height=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(height > MAX_FINDING_MARKS as f64 * SMALL, "{height}");
    }
}
