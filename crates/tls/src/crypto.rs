//! The TLS key schedule on RustCrypto's primitives: the cipher suites decrypted, TLS 1.3's
//! HKDF-Expand-Label and traffic keys (RFC 8446 §7.1–7.3), TLS 1.2's PRF and key block
//! (RFC 5246 §5, §6.3), and each direction's record protection (RFC 8446 §5.2–5.4, RFC 5288,
//! RFC 7905), and TLS 1.2's CBC suites, MAC-then-encrypt or encrypt-then-MAC (RFC 5246
//! §6.2.3.2, RFC 7366).

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
    Aes128Cbc,
    Aes256Cbc,
}

impl Bulk {
    fn key_len(self) -> usize {
        match self {
            Bulk::Aes128Gcm | Bulk::Aes128Cbc => 16,
            Bulk::Aes256Gcm | Bulk::Chacha20 | Bulk::Aes256Cbc => 32,
        }
    }

    fn aead(self) -> bool {
        !matches!(self, Bulk::Aes128Cbc | Bulk::Aes256Cbc)
    }
}

/// The record MAC of a CBC suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MacAlg {
    Sha1,
    Sha256,
    Sha384,
}

impl MacAlg {
    fn len(self) -> usize {
        match self {
            MacAlg::Sha1 => 20,
            MacAlg::Sha256 => 32,
            MacAlg::Sha384 => 48,
        }
    }
}

/// A cipher suite this build decrypts: its bulk cipher and its hash (the PRF's in TLS 1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Suite {
    pub bulk: Bulk,
    pub hash: Hash,
    /// CBC suites only.
    pub mac: Option<MacAlg>,
}

impl Suite {
    /// An AEAD suite (every TLS 1.3 suite is one).
    pub(crate) fn bulk_is_aead(&self) -> bool {
        self.bulk.aead()
    }
}

/// The suite `id` names, when it is one this build decrypts (TLS 1.3's three, and TLS 1.2's
/// AEAD and AES-CBC suites with ECDHE, DHE or RSA key exchange).
pub(crate) fn suite(id: u16) -> Option<Suite> {
    use Bulk::*;
    use Hash::*;
    let (bulk, hash, mac) = match id {
        0x1301 => (Aes128Gcm, Sha256, None),
        0x1302 => (Aes256Gcm, Sha384, None),
        0x1303 => (Chacha20, Sha256, None),
        0xC02B | 0xC02F | 0x009E | 0x009C => (Aes128Gcm, Sha256, None),
        0xC02C | 0xC030 | 0x009F | 0x009D => (Aes256Gcm, Sha384, None),
        0xCCA8..=0xCCAA => (Chacha20, Sha256, None),
        0xC009 | 0xC013 | 0x0033 | 0x002F => (Aes128Cbc, Sha256, Some(MacAlg::Sha1)),
        0xC00A | 0xC014 | 0x0039 | 0x0035 => (Aes256Cbc, Sha256, Some(MacAlg::Sha1)),
        0xC023 | 0xC027 | 0x0067 | 0x003C => (Aes128Cbc, Sha256, Some(MacAlg::Sha256)),
        0xC024 | 0xC028 | 0x006B | 0x003D => (Aes256Cbc, Sha384, Some(MacAlg::Sha384)),
        _ => return None,
    };
    Some(Suite { bulk, hash, mac })
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
            Bulk::Aes128Cbc | Bulk::Aes256Cbc => return None,
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

/// One direction's TLS 1.2 record protection: an AEAD, or AES-CBC with its MAC.
pub(crate) struct Tls12Keys {
    suite: Suite,
    aead: Option<Aead>,
    key: Vec<u8>,
    mac_key: Vec<u8>,
    iv: [u8; 12],
    seq: u64,
    /// RFC 7366 encrypt-then-MAC (CBC only).
    etm: bool,
}

impl Tls12Keys {
    /// RFC 5246 §6.3: both directions' keys (client's, server's) from the master secret:
    /// key_block = PRF(master, "key expansion", server_random + client_random), laid out as
    /// the two MAC keys, the two encryption keys, the two IVs.
    pub(crate) fn pair(
        suite: Suite,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
        etm: bool,
    ) -> Option<(Self, Self)> {
        let mac_len = suite.mac.map_or(0, MacAlg::len);
        let key_len = suite.bulk.key_len();
        // GCM: a 4-byte salt, the rest of the nonce is on the wire; ChaCha20: a 12-byte IV; CBC
        // (TLS 1.1 on): an explicit IV in every record.
        let iv_len = match suite.bulk {
            Bulk::Aes128Gcm | Bulk::Aes256Gcm => 4,
            Bulk::Chacha20 => 12,
            Bulk::Aes128Cbc | Bulk::Aes256Cbc => 0,
        };
        let mut block = vec![0; 2 * (mac_len + key_len + iv_len)];
        let seed: [&[u8]; 3] = [b"key expansion", server_random, client_random];
        prf(suite.hash, master, &seed, &mut block)?;
        let (client_mac, rest) = block.split_at(mac_len);
        let (server_mac, rest) = rest.split_at(mac_len);
        let (client_key, rest) = rest.split_at(key_len);
        let (server_key, rest) = rest.split_at(key_len);
        let (client_iv, server_iv) = rest.split_at(iv_len);
        let keys = |mac: &[u8], key: &[u8], iv: &[u8]| {
            let mut full = [0u8; 12];
            full[..iv.len()].copy_from_slice(iv);
            let aead = if suite.bulk.aead() {
                Some(Aead::new(suite.bulk, key)?)
            } else {
                None
            };
            Some(Tls12Keys {
                suite,
                aead,
                key: key.to_vec(),
                mac_key: mac.to_vec(),
                iv: full,
                seq: 0,
                etm,
            })
        };
        Some((
            keys(client_mac, client_key, client_iv)?,
            keys(server_mac, server_key, server_iv)?,
        ))
    }

    /// Decrypts one record; where the plaintext is in `body`. The AAD (and the CBC MAC's
    /// header) is seq, type, version and a length (RFC 5246 §6.2.3).
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
        let range = match (&self.aead, self.suite.bulk) {
            (Some(aead), Bulk::Aes128Gcm | Bulk::Aes256Gcm) => {
                // RFC 5288 §3: nonce = salt + the record's first 8 bytes.
                let explicit: [u8; 8] = body.get(..8)?.try_into().ok()?;
                let mut n = self.iv;
                n[4..].copy_from_slice(&explicit);
                let len = body.len().checked_sub(8 + TAG)?;
                let opened = aead.open(&n, &aad(len), &mut body[8..])?;
                8..8 + opened
            }
            (Some(aead), Bulk::Chacha20) => {
                // RFC 7905 §2: nonce = IV XOR seq.
                let len = body.len().checked_sub(TAG)?;
                let opened = aead.open(&nonce(&self.iv, seq), &aad(len), body)?;
                0..opened
            }
            (None, Bulk::Aes128Cbc | Bulk::Aes256Cbc) => self.open_cbc(&aad, body)?,
            _ => return None,
        };
        self.seq += 1;
        Some(range)
    }

    /// RFC 5246 §6.2.3.2: IV, then the encrypted data, MAC and padding; with encrypt-then-MAC
    /// (RFC 7366) the MAC follows the ciphertext and covers it instead. Both MACs are checked.
    fn open_cbc(
        &self,
        aad: &dyn Fn(usize) -> [u8; 13],
        body: &mut [u8],
    ) -> Option<std::ops::Range<usize>> {
        use cbc::cipher::{BlockModeDecrypt, KeyIvInit, block_padding::NoPadding};
        let mac = self.suite.mac?;
        let mac_len = mac.len();
        let mut end = body.len();
        if self.etm {
            end = end.checked_sub(mac_len)?;
            let (covered, tag) = body.split_at(end);
            if !verify_mac(mac, &self.mac_key, &aad(covered.len()), covered, tag) {
                return None;
            }
        }
        if end < 32 || !end.is_multiple_of(16) {
            return None;
        }
        let (iv, ct) = body[..end].split_at_mut(16);
        let plain = match self.suite.bulk {
            Bulk::Aes128Cbc => cbc::Decryptor::<aes::Aes128>::new_from_slices(&self.key, iv)
                .ok()?
                .decrypt_padded::<NoPadding>(ct)
                .ok()?
                .len(),
            _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(&self.key, iv)
                .ok()?
                .decrypt_padded::<NoPadding>(ct)
                .ok()?
                .len(),
        };
        let pad = usize::from(*ct.get(plain.checked_sub(1)?)?);
        let unpadded = plain.checked_sub(pad + 1)?;
        if !ct[unpadded..plain - 1]
            .iter()
            .all(|&b| usize::from(b) == pad)
        {
            return None;
        }
        if self.etm {
            return Some(16..16 + unpadded);
        }
        let len = unpadded.checked_sub(mac_len)?;
        let (data, tag) = ct[..unpadded].split_at(len);
        verify_mac(mac, &self.mac_key, &aad(len), data, tag).then_some(16..16 + len)
    }
}

/// An HMAC over `header` then `data` equals `tag` (compared in constant time by the crate).
fn verify_mac(alg: MacAlg, key: &[u8], header: &[u8], data: &[u8], tag: &[u8]) -> bool {
    fn check<M: Mac + KeyInit>(key: &[u8], header: &[u8], data: &[u8], tag: &[u8]) -> bool {
        let Ok(mut m) = <M as KeyInit>::new_from_slice(key) else {
            return false;
        };
        m.update(header);
        m.update(data);
        m.verify_slice(tag).is_ok()
    }
    match alg {
        MacAlg::Sha1 => check::<Hmac<sha1::Sha1>>(key, header, data, tag),
        MacAlg::Sha256 => check::<Hmac<Sha256>>(key, header, data, tag),
        MacAlg::Sha384 => check::<Hmac<Sha384>>(key, header, data, tag),
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
