//! What an item's reader borrows from the item's bytes instead of allocating: keys and strings
//! without escapes ([`Text`]), an object's entries ([`Entries`]), a metric's number
//! ([`Number`]). A million items would otherwise allocate tens of millions of short strings.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A string borrowed from the input when it has no escapes, owned otherwise.
pub(super) struct Text<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// An object's entries, keys borrowed ([`Text`]).
pub(super) struct Entries<'de, T>(Vec<(Text<'de>, T)>);

impl<'de, T> Entries<'de, T> {
    /// The entries by key, as a map would give them (of a repeated key, the last one last).
    pub(super) fn sorted(mut self) -> Vec<(Text<'de>, T)> {
        self.0.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
        self.0
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Entries<'de, T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Entries<'de, T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries<'de, T>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(key) = map.next_key::<Text>()? {
                    out.push((key, map.next_value()?));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A metric's value when it is a number; anything else (null, a string, a list) is none.
pub(super) struct Number(pub Option<f64>);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Number(Value::deserialize(d)?.as_f64()))
    }
}
