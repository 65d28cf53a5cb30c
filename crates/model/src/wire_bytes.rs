//! Bytes taken from the wire in a serialized record: as a JSON string when they are UTF-8 (the
//! JSON bodies MCP carries, readable and queryable as they are), else as `{"base64": …}`, so
//! that no byte is lost and nothing is escaped twice.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serializer};

/// `#[serde(with = "mcpf_model::wire_bytes")]` on a `Vec<u8>`.
pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
    match std::str::from_utf8(bytes) {
        Ok(text) => s.serialize_str(text),
        Err(_) => {
            use serde::ser::SerializeMap;
            let mut map = s.serialize_map(Some(1))?;
            map.serialize_entry("base64", &STANDARD.encode(bytes))?;
            map.end()
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Repr {
    Text(String),
    Base64 { base64: String },
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    match Repr::deserialize(d)? {
        Repr::Text(t) => Ok(t.into_bytes()),
        Repr::Base64 { base64 } => STANDARD
            .decode(base64.as_bytes())
            .map_err(serde::de::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Body(#[serde(with = "super")] Vec<u8>);

    #[test]
    fn text_stays_text_and_binary_round_trips() {
        let text = Body(br#"{"jsonrpc":"2.0"}"#.to_vec());
        let json = serde_json::to_string(&text).unwrap();
        assert_eq!(json, r#""{\"jsonrpc\":\"2.0\"}""#);
        assert_eq!(serde_json::from_str::<Body>(&json).unwrap(), text);
        let binary = Body(vec![0x1f, 0x8b, 0xff, 0x00]);
        let json = serde_json::to_string(&binary).unwrap();
        assert_eq!(json, r#"{"base64":"H4v/AA=="}"#);
        assert_eq!(serde_json::from_str::<Body>(&json).unwrap(), binary);
        assert!(serde_json::from_str::<Body>(r#"{"base64":"!!"}"#).is_err());
    }
}
