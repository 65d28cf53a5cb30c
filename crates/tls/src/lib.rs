#![forbid(unsafe_code)]
//! TLS decryption for forensics: given an NSS key log (what `SSLKEYLOGFILE` makes browsers,
//! curl, httpx and Node write), the records of a captured TLS 1.2 or 1.3 connection are
//! decrypted back into the bytes the HTTP stage reads. Sans-IO: each direction's TCP bytes are
//! fed in order, plaintext and what could not be decrypted (with the reason) come out.
//!
//! Every cipher, MAC and key derivation function is RustCrypto's; what is written here is the
//! TLS key schedule (RFC 8446 §7, RFC 5246 §5–6) on top of them and the record layer.

pub mod conn;
mod crypto;
pub mod keylog;
pub mod layer;

pub use conn::{Output, TlsConnection, Undecryptable};
pub use keylog::{KeyLog, KeyLogError, Secrets};
pub use layer::{MAX_FAILURES_LISTED, TlsLayer, TlsStats};
