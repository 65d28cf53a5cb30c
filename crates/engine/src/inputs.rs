//! Input arguments to input files: a directory stands for the captures, HAR files and logs under
//! it (by their names' extensions, in sorted order, hidden ones left out), and a quoted glob for
//! the files it matches (for the many files of many hosts, past what a shell passes). Everything
//! left out of a directory is counted and said.

use std::path::{Path, PathBuf};

/// The names a directory's inputs end with; `.gz` after any of them too.
const EXTENSIONS: &[&str] = &["pcap", "pcapng", "cap", "har", "jsonl", "ndjson", "log"];
/// How deep a directory is walked, and how many files one argument may expand to.
const MAX_DEPTH: usize = 16;
const MAX_FILES: usize = 100_000;

/// What the arguments expanded to, and what was left out (one line each, for standard error).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expanded {
    pub files: Vec<String>,
    pub notes: Vec<String>,
}

/// Every argument as given, unless it names a directory or is a glob that names no file.
pub fn expand(args: &[String]) -> Expanded {
    let mut out = Expanded::default();
    for arg in args {
        let path = Path::new(arg);
        if arg == "-" || path.is_file() || (!path.exists() && !is_glob(arg)) {
            out.files.push(arg.clone());
        } else if path.is_dir() {
            directory(arg, &mut out);
        } else if path.exists() {
            out.files.push(arg.clone());
        } else {
            glob(arg, &mut out);
        }
    }
    out
}

fn is_glob(arg: &str) -> bool {
    arg.contains(['*', '?', '['])
}

fn is_input_name(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let name = name.strip_suffix(".gz").unwrap_or(name);
    name.rsplit_once('.')
        .is_some_and(|(_, ext)| EXTENSIONS.iter().any(|e| ext.eq_ignore_ascii_case(e)))
}

fn directory(arg: &str, out: &mut Expanded) {
    let mut walk = Walk::default();
    walk.dir(Path::new(arg), 0);
    let found = walk.files.len();
    if found == 0 {
        out.notes.push(format!(
            "{arg}: no capture, HAR or log in it (names ending .{})",
            EXTENSIONS.join(", .")
        ));
    }
    out.files.extend(
        walk.files
            .into_iter()
            .map(|p| p.to_string_lossy().into_owned()),
    );
    if walk.other > 0 {
        out.notes.push(format!(
            "{arg}: {} other file{} left out (not .{})",
            walk.other,
            if walk.other == 1 { "" } else { "s" },
            EXTENSIONS.join(", .")
        ));
    }
    if walk.unread > 0 {
        out.notes.push(format!(
            "{arg}: {} folder{} could not be listed",
            walk.unread,
            if walk.unread == 1 { "" } else { "s" }
        ));
    }
    if walk.linked_dirs > 0 {
        out.notes.push(format!(
            "{arg}: {} symlink{} to folders not followed (name the folders to read them)",
            walk.linked_dirs,
            if walk.linked_dirs == 1 { "" } else { "s" }
        ));
    }
    if walk.too_deep > 0 || walk.too_many {
        out.notes.push(format!(
            "{arg}: walked {MAX_DEPTH} folders deep and {MAX_FILES} files at most; the rest left out"
        ));
    }
}

/// A directory's inputs, depth first in sorted order.
#[derive(Default)]
struct Walk {
    files: Vec<PathBuf>,
    other: u64,
    unread: u64,
    too_deep: u64,
    too_many: bool,
    /// Symlinks to directories, not followed.
    linked_dirs: u64,
}

impl Walk {
    fn dir(&mut self, dir: &Path, depth: usize) {
        if depth > MAX_DEPTH {
            self.too_deep += 1;
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            self.unread += 1;
            return;
        };
        // A symlink to a directory is not followed (a link to `.` would loop); one to a file
        // is read like the file.
        let mut entries: Vec<(PathBuf, bool)> = entries
            .filter_map(|e| e.ok())
            .map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_dir())))
            .collect();
        entries.sort();
        for (p, is_dir) in entries {
            if self.too_many {
                return;
            }
            let hidden = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with('.'));
            if hidden {
                continue;
            }
            if is_dir {
                self.dir(&p, depth + 1);
            } else if p.is_dir() {
                self.linked_dirs += 1;
            } else if !is_input_name(&p) {
                self.other += 1;
            } else if self.files.len() < MAX_FILES {
                self.files.push(p);
            } else {
                self.too_many = true;
            }
        }
    }
}

fn glob(arg: &str, out: &mut Expanded) {
    // As a shell does: `*` does not match a name's leading dot.
    let options = glob::MatchOptions {
        require_literal_leading_dot: true,
        ..glob::MatchOptions::new()
    };
    let Ok(paths) = glob::glob_with(arg, options) else {
        out.files.push(arg.to_string());
        return;
    };
    let mut matched: Vec<String> = Vec::new();
    let mut unread = 0;
    for p in paths {
        match p {
            Ok(p) if p.is_file() && matched.len() < MAX_FILES => {
                matched.push(p.to_string_lossy().into_owned());
            }
            Ok(_) => {}
            Err(_) => unread += 1,
        }
    }
    if matched.is_empty() {
        // Left as given: opening it says "no such file".
        out.files.push(arg.to_string());
    }
    out.files.extend(matched);
    if unread > 0 {
        out.notes
            .push(format!("{arg}: {unread} paths could not be read"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "b/host2.pcap",
            "a/host1.pcapng",
            "a/x.truth.json",
            "a/.hidden.pcap",
            "top.log.gz",
            "notes.txt",
        ] {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"x").unwrap();
        }
        d
    }

    #[test]
    fn a_directory_is_its_inputs_in_order_and_the_rest_is_counted() {
        let d = tree();
        let root = d.path().to_string_lossy().into_owned();
        let e = expand(std::slice::from_ref(&root));
        let rel: Vec<String> = e
            .files
            .iter()
            .map(|f| f.strip_prefix(&root).unwrap().to_string())
            .collect();
        assert_eq!(rel, ["/a/host1.pcapng", "/b/host2.pcap", "/top.log.gz"]);
        assert_eq!(
            e.notes,
            [format!(
                "{root}: 2 other files left out (not .pcap, .pcapng, .cap, .har, .jsonl, .ndjson, .log)"
            )]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_not_followed() {
        let d = tree();
        std::os::unix::fs::symlink(d.path(), d.path().join("a/loop")).unwrap();
        std::os::unix::fs::symlink(d.path().join("b/host2.pcap"), d.path().join("link.pcap"))
            .unwrap();
        let root = d.path().to_string_lossy().into_owned();
        let e = expand(std::slice::from_ref(&root));
        assert_eq!(e.files.len(), 4, "{e:?}");
        assert!(
            e.files.iter().any(|f| f.ends_with("link.pcap")),
            "a linked file is read"
        );
        assert!(
            e.notes
                .iter()
                .any(|n| n.contains("1 symlink to folders not followed")),
            "{:?}",
            e.notes
        );
    }

    #[test]
    fn a_glob_is_the_files_it_matches_and_a_plain_path_stays() {
        let d = tree();
        let root = d.path().to_string_lossy().into_owned();
        let e = expand(&[
            format!("{root}/*/*.pcap*"),
            "missing.pcap".into(),
            "-".into(),
        ]);
        assert_eq!(e.files.len(), 4, "{e:?}");
        assert!(e.files[0].ends_with("a/host1.pcapng") && e.files[1].ends_with("b/host2.pcap"));
        assert_eq!(&e.files[2..], ["missing.pcap", "-"]);
        let none = expand(&[format!("{root}/*.nothing")]);
        assert_eq!(
            none.files,
            [format!("{root}/*.nothing")],
            "kept, to be reported missing"
        );
    }
}
