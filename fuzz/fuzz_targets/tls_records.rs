//! A key log and arbitrary TLS bytes of one connection, both directions: record framing, the
//! ClientHello and ServerHello, key derivation (TLS 1.2 and 1.3) and record decryption.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpf_fuzz::tls_records(data));
