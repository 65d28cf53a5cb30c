//! The committed samples every input test runs over: captures, HAR files and JSON Lines logs
//! under samples/, by file name, sorted.

/// The file names (not the paths) of the samples under samples/.
pub fn names() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            [".pcap", ".pcapng", ".har", ".jsonl"]
                .iter()
                .any(|x| n.ends_with(x))
        })
        .collect();
    out.sort();
    out
}

/// Their paths from the repository's root: `samples/<name>`.
#[allow(dead_code)]
pub fn paths() -> Vec<String> {
    names()
        .into_iter()
        .map(|n| format!("samples/{n}"))
        .collect()
}
