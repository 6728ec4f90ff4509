//! Decoding of the inference requests the data path serves itself (spec §1.8, §1.11, §2): a JSON
//! body, or a JSON header with binary tensor data, whose every part is within what the published
//! route describes. The decoder never produces an error message: whatever it does not accept
//! (malformed JSON, an unknown field, a parameter other than the binary data ones, a shape or
//! datatype the model does not declare, data that does not fit its shape) is answered by the
//! TypeScript data plane, which owns every error text (`Decoded::Fallback`). So the data path
//! serves exactly the requests both paths answer the same way.
use crate::route::{element_size, Route};
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// One decoded input: index into the route's inputs, its shape and its bytes (little-endian).
#[derive(Debug)]
pub struct InputTensor {
    pub index: usize,
    pub shape: Vec<i64>,
    pub data: Data,
}

/// An input's bytes: decoded from JSON, or a range of the request body (binary data extension).
#[derive(Debug)]
pub enum Data {
    Owned(Vec<u8>),
    Body(std::ops::Range<usize>),
}

/// How the response prints each output (spec §2: `binary_data_output`, per-output `binary_data`).
#[derive(Debug, Default)]
pub struct OutputFormats {
    pub default_binary: bool,
    /// Requested outputs in request order with their own binary flag; empty = all outputs.
    pub requested: Vec<(usize, bool)>,
}

impl OutputFormats {
    /// Whether output `index` of the route prints as binary.
    pub fn binary(&self, index: usize) -> bool {
        binary_of(&self.requested, self.default_binary, index)
    }
}

/// Whether output `index` prints as binary: its own flag among `requested`, else `default_binary`.
pub fn binary_of(requested: &[(usize, bool)], default_binary: bool, index: usize) -> bool {
    requested.iter().find(|(i, _)| *i == index).map(|(_, b)| *b).unwrap_or(default_binary)
}

/// A request the data path serves.
#[derive(Debug)]
pub struct Decoded {
    pub id: String,
    pub inputs: Vec<InputTensor>,
    pub formats: OutputFormats,
    /// Batch size (first dim of the inputs when the model batches, else 1).
    pub batch: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestJson<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Option<RequestParams>,
    #[serde(borrow)]
    inputs: Vec<InputJson<'a>>,
    #[serde(borrow, default)]
    outputs: Option<Vec<OutputJson<'a>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequestParams {
    binary_data_output: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputJson<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    shape: Vec<u64>,
    #[serde(borrow)]
    datatype: Cow<'a, str>,
    #[serde(default)]
    parameters: Option<InputParams>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputParams {
    binary_data_size: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputJson<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    parameters: Option<OutputParams>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputParams {
    binary_data: Option<bool>,
}

/// Largest element count the data path decodes (anything larger is the data plane's to refuse).
pub const MAX_ELEMENTS: u64 = 1 << 40;

/// Decodes `body` (`header_len`: the `Inference-Header-Content-Length`, None = all JSON) for `route`.
/// @returns None when the TypeScript data plane must answer the request (see the module comment)
pub fn decode(route: &Route, body: &[u8], header_len: Option<usize>) -> Option<Decoded> {
    let json_len = header_len.unwrap_or(body.len());
    if json_len == 0 || json_len > body.len() {
        return None; // raw binary requests and short bodies: the data plane's
    }
    let doc: RequestJson = serde_json::from_slice(&body[..json_len]).ok()?;
    if doc.inputs.len() != route.inputs.len() {
        return None;
    }
    let mut offset = json_len;
    let mut seen = vec![false; route.inputs.len()];
    let mut inputs = Vec::with_capacity(doc.inputs.len());
    let mut batch: Option<u64> = None;
    for i in doc.inputs {
        let index = route.inputs.iter().position(|r| r.name == i.name)?;
        if std::mem::replace(&mut seen[index], true) {
            return None;
        }
        let spec = &route.inputs[index];
        if crate::route::DATATYPES[spec.datatype as usize] != i.datatype {
            return None;
        }
        let dims = if route.max_batch_size > 0 {
            let (&b, rest) = i.shape.split_first()?;
            if b < 1 || b > route.max_batch_size as u64 || batch.is_some_and(|x| x != b) {
                return None;
            }
            batch = Some(b);
            rest
        } else {
            &i.shape[..]
        };
        if dims.len() != spec.dims.len()
            || dims.iter().zip(&spec.dims).any(|(&d, &s)| d == 0 || (s != -1 && d != s as u64))
        {
            return None;
        }
        let mut n: u64 = 1;
        for &d in &i.shape {
            n = n.checked_mul(d).filter(|&x| x <= MAX_ELEMENTS)?;
        }
        let size = element_size(spec.datatype) as u64;
        let data = match (i.data, i.parameters) {
            (Some(raw), None) => Data::Owned(json_tensor(raw.get(), spec.datatype, n)?),
            (None, Some(p)) => {
                if p.binary_data_size != n * size {
                    return None;
                }
                let end = offset.checked_add(usize::try_from(p.binary_data_size).ok()?)?;
                if end > body.len() {
                    return None;
                }
                let r = offset..end;
                offset = end;
                Data::Body(r)
            }
            _ => return None,
        };
        inputs.push(InputTensor { index, shape: i.shape.iter().map(|&d| d as i64).collect(), data });
    }
    if offset != body.len() {
        return None;
    }
    let mut formats = OutputFormats {
        default_binary: doc.parameters.and_then(|p| p.binary_data_output).unwrap_or(false),
        requested: Vec::new(),
    };
    if let Some(outputs) = doc.outputs {
        for o in outputs {
            let index = route.outputs.iter().position(|n| *n == o.name)?;
            if formats.requested.iter().any(|(i, _)| *i == index) {
                return None;
            }
            formats.requested.push((index, o.parameters.and_then(|p| p.binary_data).unwrap_or(false)));
        }
    }
    Some(Decoded { id: doc.id.map(|s| s.into_owned()).unwrap_or_default(), inputs, formats, batch: batch.unwrap_or(1) })
}

/// A flat JSON array of `n` elements of `datatype` as little-endian bytes, or None (nested arrays,
/// a value of another JSON type, an integer out of range, FP16/BF16: the data plane's).
fn json_tensor(text: &str, datatype: u32, n: u64) -> Option<Vec<u8>> {
    let size = element_size(datatype);
    let mut out = Vec::with_capacity(usize::try_from(n).ok()?.checked_mul(size)?.min(1 << 24));
    let mut de = serde_json::Deserializer::from_str(text);
    ElementsSeed { datatype, out: &mut out }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    (out.len() as u64 == n * size as u64).then_some(out)
}

struct ElementsSeed<'o> {
    datatype: u32,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for ElementsSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ElementsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a flat array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Element { datatype: self.datatype, out: self.out })?.is_some() {}
        Ok(())
    }
}

struct Element<'o> {
    datatype: u32,
    out: &'o mut Vec<u8>,
}

impl<'de> DeserializeSeed<'de> for Element<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

fn refuse<E: de::Error>() -> E {
    E::custom("not served natively")
}

impl Element<'_> {
    /// An integer element (JSON integer token); floats take it rounded, integer types check range.
    fn int<E: de::Error>(self, v: i128) -> Result<(), E> {
        let o = self.out;
        match self.datatype {
            2 => o.push(u8::try_from(v).map_err(|_| refuse())?),
            3 => o.extend(u16::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            4 => o.extend(u32::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            5 => o.extend(u64::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            6 => o.extend(i8::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            7 => o.extend(i16::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            8 => o.extend(i32::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            9 => o.extend(i64::try_from(v).map_err(|_| refuse())?.to_le_bytes()),
            // |v| < 2^64: exact in f64 up to 2^53; beyond, JS reads the token as the nearest double too.
            11 => o.extend(((v as f64) as f32).to_le_bytes()),
            12 => o.extend((v as f64).to_le_bytes()),
            _ => return Err(refuse()),
        }
        Ok(())
    }
}

impl<'de> Visitor<'de> for Element<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or boolean")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        if self.datatype != 1 {
            return Err(refuse());
        }
        self.out.push(v as u8);
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.int(v as i128)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.int(v as i128)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        match self.datatype {
            11 => self.out.extend((v as f32).to_le_bytes()),
            12 => self.out.extend(v.to_le_bytes()),
            _ => return Err(refuse()),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::{InputSpec, Instance, OutputSpec, RouteSpec};

    fn route(datatype: &str, dims: Vec<i64>, max_batch_size: i64) -> Route {
        let spec = RouteSpec {
            name: "m".into(),
            version: 1,
            max_batch_size,
            inputs: vec![InputSpec { name: "IN".into(), datatype: datatype.into(), dims: dims.clone() }],
            outputs: vec![OutputSpec { name: "OUT".into(), dims, datatype: None }],
        };
        // Never executed: decoding reads only the route's table.
        Route::new(spec, vec![Instance(std::ptr::null_mut())]).expect("route")
    }

    fn body(datatype: &str, shape: &str, data: &str) -> Vec<u8> {
        format!(r#"{{"inputs":[{{"name":"IN","datatype":"{datatype}","shape":{shape},"data":{data}}}]}}"#).into_bytes()
    }

    fn owned(d: &Decoded) -> &[u8] {
        match &d.inputs[0].data {
            Data::Owned(v) => v,
            Data::Body(_) => panic!("expected decoded data"),
        }
    }

    #[test]
    fn numbers_become_the_bytes_ecmascript_stores() {
        let r = route("FP32", vec![-1], 0);
        let d = decode(&r, &body("FP32", "[4]", "[0.1,-0,1e3,18446744073709551615]"), None).expect("served");
        let want: Vec<u8> =
            [0.1f32, -0.0, 1000.0, 18446744073709551615f64 as f32].iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(owned(&d), &want[..]);
        let i = route("INT32", vec![-1], 0);
        let d = decode(&i, &body("INT32", "[3]", "[-2147483648,2147483647,0]"), None).expect("served");
        assert_eq!(owned(&d), &[0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0][..]);
    }

    #[test]
    fn what_it_does_not_decode_goes_to_the_typescript_path() {
        let r = route("INT32", vec![-1], 0);
        for (shape, data) in [
            ("[2]", "[1]"),                          // data not matching the shape
            ("[1]", "[[1]]"),                        // nested
            ("[1]", "[2147483648]"),                 // out of range
            ("[1]", "[1.5]"),                        // a fraction for an integer type
            ("[1]", "[\"1\"]"),                      // a string
            ("[1]", "[true]"),                       // a boolean
            ("[0]", "[]"),                           // an empty dimension
            ("[1099511627776,1099511627776]", "[]"), // an element count past every bound
        ] {
            assert!(decode(&r, &body("INT32", shape, data), None).is_none(), "{shape} {data}");
        }
        assert!(decode(&r, &body("FP32", "[1]", "[1]"), None).is_none(), "another datatype");
        for text in [
            r#"{"inputs":[],"x":1}"#,
            r#"{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1],"name":"IN"}]}"#,
            r#"{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}],"parameters":{"priority":1}}"#,
            r#"{"inputs":[{"name":"NO","datatype":"INT32","shape":[1],"data":[1]}]}"#,
            r#"{"inputs":[{"name":"IN","datatype":"INT32","shape":[1],"data":[1]}],"outputs":[{"name":"OUT"},{"name":"OUT"}]}"#,
            "not json",
        ] {
            assert!(decode(&r, text.as_bytes(), None).is_none(), "{text}");
        }
    }

    #[test]
    fn hostile_nesting_and_lengths_are_refused_without_harm() {
        let r = route("INT32", vec![-1], 0);
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(decode(&r, &body("INT32", "[1]", &deep), None).is_none());
        let b = body("INT32", "[1]", "[1]");
        assert!(decode(&r, &b, Some(b.len() + 1)).is_none(), "a header longer than the body");
        assert!(decode(&r, &b, Some(0)).is_none(), "raw binary");
        let header =
            br#"{"inputs":[{"name":"IN","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]}"#;
        let mut bin = header.to_vec();
        bin.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
        let d = decode(&r, &bin, Some(header.len())).expect("served");
        assert!(matches!(d.inputs[0].data, Data::Body(ref range) if range.len() == 8));
        bin.push(0);
        assert!(decode(&r, &bin, Some(header.len())).is_none(), "bytes left over");
        assert!(decode(&r, &bin[..bin.len() - 3], Some(header.len())).is_none(), "bytes missing");
    }

    #[test]
    fn the_batch_dimension_is_checked_against_max_batch_size() {
        let r = route("FP32", vec![2], 4);
        assert_eq!(decode(&r, &body("FP32", "[3,2]", "[1,2,3,4,5,6]"), None).expect("served").batch, 3);
        assert!(decode(&r, &body("FP32", "[5,2]", &format!("[{}]", ["1"; 10].join(","))), None).is_none());
        assert!(decode(&r, &body("FP32", "[2]", "[1,2]"), None).is_none(), "no batch dimension");
        assert!(decode(&r, &body("FP32", "[1,3]", "[1,2,3]"), None).is_none(), "a dim other than declared");
    }
}
