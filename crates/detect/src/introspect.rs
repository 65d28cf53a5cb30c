//! The field names a `Deserialize` struct declares, read without a value: serde hands them to
//! `deserialize_struct`, and this deserializer keeps them and stops. So the keys of each kind's
//! evidence are said in one place, its struct, and the registry, `explain` and the docs checks
//! read them from there.

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The fields of `T` in declaration order (with their serde names); empty when `T` is not a
/// struct.
pub(crate) fn fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut found: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut found));
    found
}

struct Fields<'a>(&'a mut &'static [&'static str]);

#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("fields read")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Fields<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Stop> {
        *self.0 = fields;
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    #[allow(dead_code)]
    struct Two {
        first: u8,
        #[serde(rename = "second_name")]
        second: Option<String>,
    }

    #[test]
    fn a_structs_fields_are_read_in_order() {
        assert_eq!(fields::<Two>(), ["first", "second_name"]);
        assert!(fields::<u8>().is_empty());
    }
}
