//! The TLS key schedule on RustCrypto's primitives: the cipher suites decrypted, TLS 1.3's
//! HKDF-Expand-Label and traffic keys (RFC 8446 §7.1–7.3), TLS 1.2's PRF and key block
//! (RFC 5246 §5, §6.3), and each direction's record protection (RFC 8446 §5.2–5.4, RFC 5288,
//! RFC 7905). AEAD suites only for now; CBC suites are reported as not supported.

use aes_gcm::{AeadInOut, Aes128Gcm, Aes256Gcm, KeyInit};
use chacha20poly1305::ChaCha20Poly1305;
use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    pub(crate) fn len(self) -> usize {
        match self {
            Hash::Sha256 => 32,
            Hash::Sha384 => 48,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bulk {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20,
}

impl Bulk {
    fn key_len(self) -> usize {
        match self {
            Bulk::Aes128Gcm => 16,
            Bulk::Aes256Gcm | Bulk::Chacha20 => 32,
        }
    }
}

/// A cipher suite this build decrypts: its bulk cipher and its hash (the PRF's in TLS 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Suite {
    pub bulk: Bulk,
    pub hash: Hash,
}

/// The suite `id` names, when it is one this build decrypts (TLS 1.3's three, and TLS 1.2's
/// AEAD suites with ECDHE, DHE or RSA key exchange).
pub(crate) fn suite(id: u16) -> Option<Suite> {
    use Bulk::*;
    use Hash::*;
    let (bulk, hash) = match id {
        0x1301 => (Aes128Gcm, Sha256),
        0x1302 => (Aes256Gcm, Sha384),
        0x1303 => (Chacha20, Sha256),
        0xC02B | 0xC02F | 0x009E | 0x009C => (Aes128Gcm, Sha256),
        0xC02C | 0xC030 | 0x009F | 0x009D => (Aes256Gcm, Sha384),
        0xCCA8..=0xCCAA => (Chacha20, Sha256),
        _ => return None,
    };
    Some(Suite { bulk, hash })
}

/// RFC 8446 §7.1: HKDF-Expand(Secret, HkdfLabel, Length), HkdfLabel = length, "tls13 " +
/// label, context. The traffic secrets of a key log are already pseudorandom keys.
pub(crate) fn expand_label(hash: Hash, secret: &[u8], label: &[u8], out: &mut [u8]) -> Option<()> {
    let len = u16::try_from(out.len()).ok()?.to_be_bytes();
    let label_len = [u8::try_from(6 + label.len()).ok()?];
    let info: [&[u8]; 5] = [&len, &label_len, b"tls13 ", label, &[0]];
    match hash {
        Hash::Sha256 => Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand_multi_info(&info, out)
            .ok(),
        Hash::Sha384 => Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand_multi_info(&info, out)
            .ok(),
    }
}

/// RFC 5246 §5: P_hash(secret, seed) = HMAC(secret, A(1) + seed) + HMAC(secret, A(2) + seed)
/// + …, A(0) = seed, A(i) = HMAC(secret, A(i-1)); here seed = label + the seeds.
fn p_hash<M: Mac + KeyInit + Clone>(secret: &[u8], seed: &[&[u8]], out: &mut [u8]) -> Option<()> {
    let base = <M as KeyInit>::new_from_slice(secret).ok()?;
    let hmac_of = |parts: &[&[u8]]| {
        let mut m = base.clone();
        for p in parts {
            m.update(p);
        }
        m.finalize().into_bytes()
    };
    let mut a = hmac_of(seed);
    let mut filled = 0;
    while filled < out.len() {
        let mut parts: Vec<&[u8]> = vec![&a];
        parts.extend_from_slice(seed);
        let block = hmac_of(&parts);
        let n = (out.len() - filled).min(block.len());
        out[filled..filled + n].copy_from_slice(&block[..n]);
        filled += n;
        a = hmac_of(&[&a]);
    }
    Some(())
}

fn prf(hash: Hash, secret: &[u8], seed: &[&[u8]], out: &mut [u8]) -> Option<()> {
    match hash {
        Hash::Sha256 => p_hash::<Hmac<Sha256>>(secret, seed, out),
        Hash::Sha384 => p_hash::<Hmac<Sha384>>(secret, seed, out),
    }
}

enum Aead {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    Chacha(Box<ChaCha20Poly1305>),
}

/// The AEAD tag's length for every suite here.
const TAG: usize = 16;

impl Aead {
    fn new(bulk: Bulk, key: &[u8]) -> Option<Self> {
        Some(match bulk {
            Bulk::Aes128Gcm => Aead::Aes128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            Bulk::Aes256Gcm => Aead::Aes256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            Bulk::Chacha20 => Aead::Chacha(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?)),
        })
    }

    /// Decrypts `buf` (ciphertext then tag) in place; the plaintext's length when the tag holds.
    fn open(&self, nonce: &[u8; 12], aad: &[u8], buf: &mut [u8]) -> Option<usize> {
        let n = buf.len().checked_sub(TAG)?;
        let (ct, tag) = buf.split_at_mut(n);
        let tag = aes_gcm::Tag::try_from(&*tag).ok()?;
        let nonce = aes_gcm::Nonce::<aes_gcm::aead::consts::U12>::from(*nonce);
        let opened = match self {
            Aead::Aes128(c) => c.decrypt_inout_detached(&nonce, aad, ct.into(), &tag),
            Aead::Aes256(c) => c.decrypt_inout_detached(&nonce, aad, ct.into(), &tag),
            Aead::Chacha(c) => c.decrypt_inout_detached(&nonce, aad, ct.into(), &tag),
        };
        opened.ok().map(|_| n)
    }
}

/// The per-record nonce: the IV with the sequence number XORed into its last 8 bytes.
fn nonce(iv: &[u8; 12], seq: u64) -> [u8; 12] {
    let mut n = *iv;
    for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
        *b ^= s;
    }
    n
}

/// One direction's TLS 1.3 record protection under one traffic secret.
pub(crate) struct Tls13Keys {
    suite: Suite,
    secret: Vec<u8>,
    aead: Aead,
    iv: [u8; 12],
    seq: u64,
}

impl Tls13Keys {
    /// RFC 8446 §7.3: key and IV from a traffic secret (of the suite's hash length).
    pub(crate) fn new(suite: Suite, secret: &[u8]) -> Option<Self> {
        if secret.len() != suite.hash.len() {
            return None;
        }
        let mut key = vec![0; suite.bulk.key_len()];
        let mut iv = [0u8; 12];
        expand_label(suite.hash, secret, b"key", &mut key)?;
        expand_label(suite.hash, secret, b"iv", &mut iv)?;
        Some(Tls13Keys {
            suite,
            secret: secret.to_vec(),
            aead: Aead::new(suite.bulk, &key)?,
            iv,
            seq: 0,
        })
    }

    /// RFC 8446 §7.2: the next application traffic secret, after a KeyUpdate.
    pub(crate) fn updated(&self) -> Option<Self> {
        let mut next = vec![0; self.suite.hash.len()];
        expand_label(self.suite.hash, &self.secret, b"traffic upd", &mut next)?;
        Tls13Keys::new(self.suite, &next)
    }

    /// Decrypts one record (`header` is its 5 bytes, the AAD); the inner content type and the
    /// content's length, its padding stripped (§5.4). `None` when the tag does not hold: then
    /// the sequence number stays, so a record protected otherwise can be tried next.
    pub(crate) fn open(&mut self, header: &[u8; 5], body: &mut [u8]) -> Option<(u8, usize)> {
        let n = self.aead.open(&nonce(&self.iv, self.seq), header, body)?;
        self.seq += 1;
        let end = body[..n].iter().rposition(|&b| b != 0)?;
        Some((body[end], end))
    }
}

/// One direction's TLS 1.2 AEAD record protection.
pub(crate) struct Tls12Keys {
    suite: Suite,
    aead: Aead,
    iv: [u8; 12],
    seq: u64,
}

impl Tls12Keys {
    /// RFC 5246 §6.3: both directions' keys (client's, server's) from the master secret:
    /// key_block = PRF(master, "key expansion", server_random + client_random).
    pub(crate) fn pair(
        suite: Suite,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
    ) -> Option<(Self, Self)> {
        let key_len = suite.bulk.key_len();
        // GCM: a 4-byte salt, the rest of the nonce is on the wire; ChaCha20: a 12-byte IV.
        let iv_len = if suite.bulk == Bulk::Chacha20 { 12 } else { 4 };
        let mut block = vec![0; 2 * (key_len + iv_len)];
        let seed: [&[u8]; 3] = [b"key expansion", server_random, client_random];
        prf(suite.hash, master, &seed, &mut block)?;
        let (client_key, rest) = block.split_at(key_len);
        let (server_key, rest) = rest.split_at(key_len);
        let (client_iv, server_iv) = rest.split_at(iv_len);
        let keys = |key: &[u8], iv: &[u8]| {
            let mut full = [0u8; 12];
            full[..iv.len()].copy_from_slice(iv);
            Some(Tls12Keys {
                suite,
                aead: Aead::new(suite.bulk, key)?,
                iv: full,
                seq: 0,
            })
        };
        Some((keys(client_key, client_iv)?, keys(server_key, server_iv)?))
    }

    /// Decrypts one record; where the plaintext is in `body`. The AAD is seq, type, version and
    /// the plaintext's length (RFC 5246 §6.2.3.3).
    pub(crate) fn open(
        &mut self,
        header: &[u8; 5],
        body: &mut [u8],
    ) -> Option<std::ops::Range<usize>> {
        let seq = self.seq;
        let aad = |len: usize| {
            let mut a = [0u8; 13];
            a[..8].copy_from_slice(&seq.to_be_bytes());
            a[8..11].copy_from_slice(&header[..3]);
            a[11..].copy_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
            a
        };
        let range = match self.suite.bulk {
            Bulk::Aes128Gcm | Bulk::Aes256Gcm => {
                // RFC 5288 §3: nonce = salt + the record's first 8 bytes.
                let explicit: [u8; 8] = body.get(..8)?.try_into().ok()?;
                let mut n = self.iv;
                n[4..].copy_from_slice(&explicit);
                let len = body.len().checked_sub(8 + TAG)?;
                let opened = self.aead.open(&n, &aad(len), &mut body[8..])?;
                8..8 + opened
            }
            Bulk::Chacha20 => {
                // RFC 7905 §2: nonce = IV XOR seq.
                let len = body.len().checked_sub(TAG)?;
                let opened = self.aead.open(&nonce(&self.iv, seq), &aad(len), body)?;
                0..opened
            }
        };
        self.seq += 1;
        Some(range)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8448 §3 (a simple 1-RTT handshake): the server's handshake traffic secret gives this
    /// key and IV.
    #[test]
    fn tls13_traffic_keys_are_rfc_8448s() {
        let secret = hex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
        let suite = suite(0x1301).unwrap();
        let mut key = [0u8; 16];
        let mut iv = [0u8; 12];
        expand_label(suite.hash, &secret, b"key", &mut key).unwrap();
        expand_label(suite.hash, &secret, b"iv", &mut iv).unwrap();
        assert_eq!(key.to_vec(), hex("3fce516009c21727d0f2e4e86ee403bc"));
        assert_eq!(iv.to_vec(), hex("5d313eb2671276ee13000b30"));
    }

    #[test]
    fn a_wrong_length_secret_or_a_bad_tag_decrypts_nothing() {
        let suite = suite(0x1301).unwrap();
        assert!(Tls13Keys::new(suite, &[0; 48]).is_none());
        let mut k = Tls13Keys::new(suite, &[7; 32]).unwrap();
        let mut body = vec![0u8; 40];
        assert!(k.open(&[23, 3, 3, 0, 40], &mut body).is_none());
        assert_eq!(k.seq, 0);
        assert!(k.open(&[23, 3, 3, 0, 3], &mut [0, 1, 2]).is_none());
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
