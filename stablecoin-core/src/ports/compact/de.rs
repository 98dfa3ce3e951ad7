//! A serde `Deserializer` over a compact body: a typed record straight from the bytes.
//!
//! It hands a visitor what `serde_json::Deserializer` would for the JSON text the body
//! was encoded from: the same values, in the same order, through the same `visit_*`
//! calls (an unsigned integer as `u64`, a negative one as `i64`, `null` as unit or
//! `None`, an enum as a string or a one-key object, an object's keys as strings that
//! integer and bool map keys are parsed from). So a type reads the same from either
//! form; `compact::tests` checks it against serde_json value by value.

use super::reader::{Corrupt, MAX_DEPTH, Reader, Str};
use super::{FORMAT, T_ARR, T_END, T_F64, T_FALSE, T_NINT, T_NULL, T_OBJ, T_TRUE, T_UINT};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use serde::forward_to_deserialize_any;
use serde_json::Error;

/// The value of type `T` a compact body holds.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Error> {
    if bytes.first() != Some(&FORMAT) {
        return Err(de::Error::custom("compact body of unknown format"));
    }
    let mut d = De {
        r: Reader::new(bytes),
        depth: 0,
    };
    let value = T::deserialize(&mut d)?;
    if !d.r.at_end() {
        return Err(de::Error::custom("compact body: trailing bytes"));
    }
    Ok(value)
}

fn corrupt(_: Corrupt) -> Error {
    de::Error::custom("compact body: truncated or corrupt")
}

struct De<'b> {
    r: Reader<'b>,
    depth: usize,
}

impl De<'_> {
    /// Enters an array or object; `leave` when its end mark is read.
    fn enter(&mut self) -> Result<(), Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(corrupt(Corrupt));
        }
        Ok(())
    }

    /// Reads the end mark of the array or object the visitor has read to its end.
    fn leave(&mut self, what: &str) -> Result<(), Error> {
        self.depth -= 1;
        match self.r.byte().map_err(corrupt)? {
            T_END => Ok(()),
            _ => Err(de::Error::custom(format_args!(
                "trailing {what} in a compact body"
            ))),
        }
    }
}

impl<'de> de::Deserializer<'de> for &mut De<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let tag = self.r.byte().map_err(corrupt)?;
        match tag {
            T_NULL => visitor.visit_unit(),
            T_FALSE => visitor.visit_bool(false),
            T_TRUE => visitor.visit_bool(true),
            T_UINT => visitor.visit_u64(self.r.varint().map_err(corrupt)?),
            T_NINT => {
                // The encoder wrote !v for a negative v.
                let n = i64::try_from(self.r.varint().map_err(corrupt)?)
                    .map_err(|_| corrupt(Corrupt))?;
                visitor.visit_i64(!n)
            }
            T_F64 => {
                let raw: [u8; 8] = self
                    .r
                    .take(8)
                    .map_err(corrupt)?
                    .try_into()
                    .map_err(|_| corrupt(Corrupt))?;
                visitor.visit_f64(f64::from_le_bytes(raw))
            }
            T_ARR => {
                self.enter()?;
                let value = visitor.visit_seq(Items { de: &mut *self })?;
                self.leave("array items")?;
                Ok(value)
            }
            T_OBJ => {
                self.enter()?;
                let value = visitor.visit_map(Entries { de: &mut *self })?;
                self.leave("object entries")?;
                Ok(value)
            }
            tag => match self.r.string(tag, true).map_err(corrupt)? {
                // Built for this value alone: handed over, not copied.
                Str::Joined(joined) => visitor.visit_string(joined),
                s => visitor.visit_str(self.r.text(&s)),
            },
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.r.peek() == Some(T_NULL) {
            self.r.pos += 1;
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.r.peek() {
            Some(T_OBJ) => {
                self.r.pos += 1;
                self.enter()?;
                let tag = self.r.byte().map_err(corrupt)?;
                if tag == T_END {
                    return Err(de::Error::invalid_length(0, &"an object of one key"));
                }
                let value = visitor.visit_enum(Variant {
                    de: &mut *self,
                    tag,
                })?;
                self.leave("keys after an enum's variant")?;
                Ok(value)
            }
            Some(T_ARR | T_NULL | T_FALSE | T_TRUE | T_UINT | T_NINT | T_F64) | None => {
                Err(de::Error::invalid_type(
                    de::Unexpected::Other("not a string or an object"),
                    &"an enum",
                ))
            }
            Some(_) => {
                let tag = self.r.byte().map_err(corrupt)?;
                let s = self.r.string(tag, true).map_err(corrupt)?;
                visitor.visit_enum(self.r.text(&s).into_deserializer())
            }
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// An array's items, up to (not including) its end mark.
struct Items<'a, 'b> {
    de: &'a mut De<'b>,
}

impl<'de> SeqAccess<'de> for Items<'_, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.de.r.peek() {
            Some(T_END) => Ok(None),
            _ => seed.deserialize(&mut *self.de).map(Some),
        }
    }
}

/// An object's entries, up to (not including) its end mark.
struct Entries<'a, 'b> {
    de: &'a mut De<'b>,
}

impl<'de> MapAccess<'de> for Entries<'_, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if self.de.r.peek() == Some(T_END) {
            return Ok(None);
        }
        let tag = self.de.r.byte().map_err(corrupt)?;
        let key = self.de.r.string(tag, true).map_err(corrupt)?;
        seed.deserialize(MapKey(self.de.r.text(&key))).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(&mut *self.de)
    }
}

/// An enum written as `{"Variant": value}`: the variant's name, then its value.
struct Variant<'a, 'b> {
    de: &'a mut De<'b>,
    tag: u8,
}

impl<'de, 'a, 'b> EnumAccess<'de> for Variant<'a, 'b> {
    type Error = Error;
    type Variant = &'a mut De<'b>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Error> {
        let name = self.de.r.string(self.tag, true).map_err(corrupt)?;
        let value = seed.deserialize(MapKey(self.de.r.text(&name)))?;
        Ok((value, self.de))
    }
}

impl<'de> VariantAccess<'de> for &mut De<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        de::Deserialize::deserialize(self)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_seq(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_map(self, visitor)
    }
}

/// An object's key (or an enum's variant name): a string, from which a map with integer
/// or bool keys parses them, as serde_json's keys do.
struct MapKey<'s>(&'s str);

macro_rules! parse_key {
    ($($method:ident => $visit:ident,)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.0.parse() {
                Ok(v) => visitor.$visit(v),
                Err(_) => Err(de::Error::invalid_type(de::Unexpected::Str(self.0), &visitor)),
            }
        }
    )*};
}

impl<'de> de::Deserializer<'de> for MapKey<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str(self.0)
    }

    parse_key! {
        deserialize_bool => visit_bool,
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_i128 => visit_i128,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
        deserialize_u128 => visit_u128,
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_enum(self.0.into_deserializer())
    }

    forward_to_deserialize_any! {
        f32 f64 char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}
