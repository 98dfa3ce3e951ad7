//! A serde `Serializer` to the compact form: a typed record straight to the bytes.
//!
//! It writes exactly what [`super::encode`] writes for the text `serde_json::to_string`
//! gives of the same value (the same strings in the same order, so the same
//! back-references), without the text: a record is not serialized to JSON and parsed
//! again on its way to a store that keeps compact bodies. What the format does not take
//! (a float, an integer beyond 64 bits, a map key that is not a string, an integer or a
//! bool) is refused, and the caller keeps the JSON text instead, as `encode` does.

use super::encode::Encoder;
use super::{T_ARR, T_END, T_FALSE, T_NULL, T_OBJ, T_TRUE};
use serde::ser::{self, Serialize};

/// The compact form of `value`, or `None` when the format does not take it.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Option<Vec<u8>> {
    let mut enc = Encoder::new(256);
    value.serialize(&mut enc).ok()?;
    Some(enc.out)
}

/// Why a value was not encoded (never shown: the caller falls back to text).
#[derive(Debug)]
pub struct NotCompact(String);

impl std::fmt::Display for NotCompact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotCompact {}

impl ser::Error for NotCompact {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        NotCompact(msg.to_string())
    }
}

fn refuse<T>(what: &str) -> Result<T, NotCompact> {
    Err(NotCompact(format!("{what} stays text")))
}

/// An array or object being written, and how many end marks close it (two for an
/// enum variant written as `{"Variant": [...]}` or `{"Variant": {...}}`).
pub struct Compound<'a> {
    enc: &'a mut Encoder,
    ends: usize,
}

impl Compound<'_> {
    fn close(self) -> Result<(), NotCompact> {
        for _ in 0..self.ends {
            self.enc.out.push(T_END);
        }
        Ok(())
    }
}

impl<'a> Compound<'a> {
    fn open(enc: &'a mut Encoder, variant: Option<&str>, tag: u8) -> Self {
        let mut ends = 1;
        if let Some(name) = variant {
            enc.out.push(T_OBJ);
            enc.string(name, true);
            ends = 2;
        }
        enc.out.push(tag);
        Compound { enc, ends }
    }
}

impl<'a> ser::Serializer for &'a mut Encoder {
    type Ok = ();
    type Error = NotCompact;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), NotCompact> {
        self.out.push(if v { T_TRUE } else { T_FALSE });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), NotCompact> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), NotCompact> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), NotCompact> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), NotCompact> {
        self.int(v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), NotCompact> {
        match (u64::try_from(v), i64::try_from(v)) {
            (Ok(u), _) => self.serialize_u64(u),
            (_, Ok(i)) => self.serialize_i64(i),
            _ => refuse("an integer beyond 64 bits"),
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), NotCompact> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), NotCompact> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), NotCompact> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), NotCompact> {
        self.uint(v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), NotCompact> {
        match u64::try_from(v) {
            Ok(u) => self.serialize_u64(u),
            Err(_) => refuse("an integer beyond 64 bits"),
        }
    }
    fn serialize_f32(self, _v: f32) -> Result<(), NotCompact> {
        refuse("a float")
    }
    fn serialize_f64(self, _v: f64) -> Result<(), NotCompact> {
        refuse("a float")
    }
    fn serialize_char(self, v: char) -> Result<(), NotCompact> {
        self.string(v.encode_utf8(&mut [0; 4]), true);
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), NotCompact> {
        self.string(v, true);
        Ok(())
    }
    /// As serde_json writes bytes: an array of numbers.
    fn serialize_bytes(self, v: &[u8]) -> Result<(), NotCompact> {
        self.out.push(T_ARR);
        for b in v {
            self.uint(u64::from(*b));
        }
        self.out.push(T_END);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), NotCompact> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), NotCompact> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), NotCompact> {
        self.out.push(T_NULL);
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), NotCompact> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), NotCompact> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), NotCompact> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), NotCompact> {
        self.out.push(T_OBJ);
        self.string(variant, true);
        value.serialize(&mut *self)?;
        self.out.push(T_END);
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, None, T_ARR))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, None, T_ARR))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, None, T_ARR))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, Some(variant), T_ARR))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, None, T_OBJ))
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, None, T_OBJ))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, NotCompact> {
        Ok(Compound::open(self, Some(variant), T_OBJ))
    }
}

macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = NotCompact;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotCompact> {
                value.serialize(&mut *self.enc)
            }
            fn end(self) -> Result<(), NotCompact> {
                self.close()
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = NotCompact;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), NotCompact> {
        key.serialize(MapKey(&mut *self.enc))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), NotCompact> {
        value.serialize(&mut *self.enc)
    }
    fn end(self) -> Result<(), NotCompact> {
        self.close()
    }
}

macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = NotCompact;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), NotCompact> {
                self.enc.string(key, true);
                value.serialize(&mut *self.enc)
            }
            fn end(self) -> Result<(), NotCompact> {
                self.close()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

/// A map's key, written as serde_json writes keys: a string, an integer or a bool as its
/// text. Anything else is refused (serde_json refuses most of it too).
struct MapKey<'a>(&'a mut Encoder);

macro_rules! key_as_text {
    ($($method:ident: $t:ty),*) => {$(
        fn $method(self, v: $t) -> Result<(), NotCompact> {
            self.0.string(&v.to_string(), true);
            Ok(())
        }
    )*};
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = NotCompact;
    type SerializeSeq = ser::Impossible<(), NotCompact>;
    type SerializeTuple = ser::Impossible<(), NotCompact>;
    type SerializeTupleStruct = ser::Impossible<(), NotCompact>;
    type SerializeTupleVariant = ser::Impossible<(), NotCompact>;
    type SerializeMap = ser::Impossible<(), NotCompact>;
    type SerializeStruct = ser::Impossible<(), NotCompact>;
    type SerializeStructVariant = ser::Impossible<(), NotCompact>;

    key_as_text!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_char: char
    );

    fn serialize_str(self, v: &str) -> Result<(), NotCompact> {
        self.0.string(v, true);
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), NotCompact> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), NotCompact> {
        value.serialize(self)
    }
    fn serialize_f32(self, _v: f32) -> Result<(), NotCompact> {
        refuse("a float key")
    }
    fn serialize_f64(self, _v: f64) -> Result<(), NotCompact> {
        refuse("a float key")
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), NotCompact> {
        refuse("a bytes key")
    }
    fn serialize_none(self) -> Result<(), NotCompact> {
        refuse("a null key")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), NotCompact> {
        refuse("an optional key")
    }
    fn serialize_unit(self) -> Result<(), NotCompact> {
        refuse("a unit key")
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), NotCompact> {
        refuse("a unit key")
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), NotCompact> {
        refuse("an enum key")
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, NotCompact> {
        refuse("an array key")
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, NotCompact> {
        refuse("an array key")
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, NotCompact> {
        refuse("an array key")
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, NotCompact> {
        refuse("an array key")
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, NotCompact> {
        refuse("an object key")
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, NotCompact> {
        refuse("an object key")
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, NotCompact> {
        refuse("an object key")
    }
}
