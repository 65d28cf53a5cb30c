//! The finding kinds: one registry entry per kind names its detector's module, and everything
//! else is derived from it: the [`FindingKind`] enum and its list, the name in every output
//! (the module's name), what the kind means ([`KindInfo`], from the module's `INFO`), and the
//! typed [`Evidence`] enum (the module's `Evidence` struct) with the keys it has. It drives
//! `explain`, the man page, the docs checks and the JSON `kind` string.
//!
//! Adding a kind is its file (`INFO`, `Evidence`, `detect`) and one line in the call of
//! `kinds!` in lib.rs.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::{FindingKind, Severity};

/// Declares every finding kind as `Variant => module`, in the order they are listed (`explain`,
/// the man page, `not_determinable`); the detectors run in `run_detectors`' order instead.
macro_rules! kinds {
    ($($kind:ident => $module:ident),+ $(,)?) => {
        $(mod $module;)+

        /// Each kind's evidence struct, by the kind's name.
        pub mod evidence {
            $(pub use crate::$module::Evidence as $kind;)+
        }

        /// Every kind of finding.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum FindingKind {
            $($kind),+
        }

        impl FindingKind {
            /// Every kind, in the order they are listed.
            pub const ALL: &'static [FindingKind] = &[$(FindingKind::$kind),+];

            /// What the kind means, from the file of its detector.
            pub fn info(self) -> &'static KindInfo {
                match self {
                    $(FindingKind::$kind => &crate::$module::INFO),+
                }
            }

            /// The name in every output: `cross_namespace_replay`.
            pub fn name(self) -> &'static str {
                match self {
                    $(FindingKind::$kind => stringify!($module)),+
                }
            }

            /// The keys of this kind's evidence object, as its `Evidence` struct declares them.
            pub fn evidence_keys(self) -> &'static [&'static str] {
                match self {
                    $(FindingKind::$kind => {
                        crate::introspect::fields::<crate::$module::Evidence>()
                    }),+
                }
            }
        }

        /// A finding's evidence: the typed record of its kind, written as the JSON object of
        /// the report's `evidence` (docs/report-format.md, "Evidence by kind").
        #[derive(Clone, Debug, PartialEq, serde::Serialize)]
        #[serde(untagged)]
        pub enum Evidence {
            $($kind(crate::$module::Evidence)),+
        }

        impl Evidence {
            /// The kind whose evidence this is.
            pub fn kind(&self) -> FindingKind {
                match self {
                    $(Evidence::$kind(_) => FindingKind::$kind),+
                }
            }

            /// The evidence of a finding of `kind` read back from a report's JSON.
            pub fn from_json(
                kind: FindingKind,
                value: serde_json::Value,
            ) -> Result<Evidence, serde_json::Error> {
                Ok(match kind {
                    $(FindingKind::$kind => Evidence::$kind(serde_json::from_value(value)?)),+
                })
            }
        }
    };
}

impl FindingKind {
    /// The kind of a name as outputs spell it.
    pub fn from_name(name: &str) -> Option<FindingKind> {
        FindingKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    pub fn severity(self) -> Severity {
        self.info().severity
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FindingKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// What a finding kind means, for people: `explain`, the man page and the README table.
#[derive(Clone, Copy, Debug)]
pub struct KindInfo {
    pub kind: FindingKind,
    pub severity: Severity,
    /// One line: when it is raised.
    pub when: &'static str,
    pub meaning: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    /// What a finding of the kind rests on: a session whose inputs lack one of these cannot
    /// have it concluded (it is "not determinable", [`crate::not_determinable`]).
    pub requires: &'static [mcpf_mcp::model::Need],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_described_by_its_own_detector() {
        for &k in FindingKind::ALL {
            assert_eq!(k.info().kind, k, "{k}");
            assert_eq!(FindingKind::from_name(k.name()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.name());
        }
        assert_eq!(FindingKind::from_name("nope"), None);
    }
}
