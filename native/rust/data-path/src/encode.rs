//! Encoding of the responses the data path serves (spec §1.13, §2), byte for byte what the
//! TypeScript encoder writes (host/src/frontend/http/infer-response.ts): `id` when not empty,
//! `model_name`, `model_version` as a string, then `outputs` in the backend's order, each with
//! `data` printed as ECMAScript prints numbers (FP32 widened to double), or with
//! `parameters.binary_data_size` and its bytes after the JSON.
use crate::route::{element_size, DATATYPES};

/// One output of a backend's response, borrowed from it.
pub struct OutputView<'a> {
    pub name: &'a str,
    pub datatype: u32,
    pub shape: &'a [i64],
    pub data: &'a [u8],
    pub binary: bool,
}

/// The encoded body and, when any output is binary, the JSON header's length.
pub struct Encoded {
    pub body: Vec<u8>,
    pub header_len: Option<usize>,
}

/// Appends `s` as a JSON string (JSON.stringify's escaping: `"`, `\`, control characters).
pub fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes()),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Appends a double as ECMAScript's Number::toString prints it (NaN and ±Infinity as those tokens).
pub fn number(out: &mut Vec<u8>, buf: &mut ryu_js::Buffer, v: f64) {
    out.extend_from_slice(buf.format(v).as_bytes());
}

/// Appends the elements of fixed-size `data` of `datatype` as a JSON array.
/// @returns false when the bytes are not a whole number of elements (the caller refuses the response)
fn data_text(out: &mut Vec<u8>, datatype: u32, data: &[u8]) -> bool {
    let size = element_size(datatype);
    if size == 0 || data.len() % size != 0 {
        return false;
    }
    let mut buf = ryu_js::Buffer::new();
    let mut itoa = itoa_buf::Buf::default();
    out.push(b'[');
    for (i, e) in data.chunks_exact(size).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match datatype {
            1 => out.extend_from_slice(if e[0] != 0 { b"true" } else { b"false" }),
            2 => itoa.int(out, e[0] as i128),
            3 => itoa.int(out, u16::from_le_bytes([e[0], e[1]]) as i128),
            4 => itoa.int(out, u32::from_le_bytes(e.try_into().unwrap_or_default()) as i128),
            5 => itoa.int(out, u64::from_le_bytes(e.try_into().unwrap_or_default()) as i128),
            6 => itoa.int(out, e[0] as i8 as i128),
            7 => itoa.int(out, i16::from_le_bytes([e[0], e[1]]) as i128),
            8 => itoa.int(out, i32::from_le_bytes(e.try_into().unwrap_or_default()) as i128),
            9 => itoa.int(out, i64::from_le_bytes(e.try_into().unwrap_or_default()) as i128),
            11 => number(out, &mut buf, f32::from_le_bytes(e.try_into().unwrap_or_default()) as f64),
            12 => number(out, &mut buf, f64::from_le_bytes(e.try_into().unwrap_or_default())),
            _ => return false,
        }
    }
    out.push(b']');
    true
}

mod itoa_buf {
    use std::io::Write;
    /// Integer printing without an allocation per element.
    #[derive(Default)]
    pub struct Buf;
    impl Buf {
        pub fn int(&mut self, out: &mut Vec<u8>, v: i128) {
            let _ = write!(out, "{v}");
        }
    }
}

/// Longest text one element of a fixed-size datatype prints as (host/src/tensor/json.ts
/// MAX_ELEMENT_TEXT); 0 for the others.
fn max_element_text(datatype: u32) -> u128 {
    match datatype {
        1 => 6,                  // BOOL
        2 => 4,                  // UINT8
        3 => 6,                  // UINT16
        4 => 11,                 // UINT32
        5 | 9 => 21,             // UINT64, INT64
        6 => 5,                  // INT8
        7 => 7,                  // INT16
        8 => 12,                 // INT32
        10 | 11 | 12 | 14 => 26, // FP16, FP32, FP64, BF16
        _ => 0,
    }
}

/// The most bytes the outputs printed as JSON may take (host/src/tensor/json.ts jsonTextMaxBytes,
/// summed as infer-response.ts checkJsonOutputSize sums it) and the name of the largest, or None
/// when every output is binary.
pub fn json_text_bound<'a>(outputs: &[OutputView<'a>]) -> Option<(u128, &'a str)> {
    let mut total = 0u128;
    let mut largest: Option<(u128, &'a str)> = None;
    for o in outputs.iter().filter(|o| !o.binary) {
        let size = element_size(o.datatype).max(1);
        let bytes = 2 + (o.data.len().div_ceil(size) as u128) * max_element_text(o.datatype);
        total += bytes;
        if largest.is_none_or(|(b, _)| bytes > b) {
            largest = Some((bytes, o.name));
        }
    }
    largest.map(|(_, name)| (total, name))
}

/// Encodes a response for `/infer`; `parameters`, when given, is the response's `parameters`
/// member as JSON text (a non-empty object).
/// @returns None when an output's bytes do not fit its datatype (not served natively)
pub fn encode(
    model: &str,
    version: &str,
    id: &str,
    parameters: Option<&[u8]>,
    outputs: &[OutputView],
) -> Option<Encoded> {
    let mut json: Vec<u8> = Vec::with_capacity(
        128 + outputs.iter().map(|o| if o.binary { 64 } else { 64 + o.data.len() * 6 }).sum::<usize>(),
    );
    json.push(b'{');
    if !id.is_empty() {
        json.extend_from_slice(b"\"id\":");
        json_string(&mut json, id);
        json.push(b',');
    }
    json.extend_from_slice(b"\"model_name\":");
    json_string(&mut json, model);
    json.extend_from_slice(b",\"model_version\":\"");
    json.extend_from_slice(version.as_bytes());
    json.push(b'"');
    if let Some(p) = parameters {
        json.extend_from_slice(b",\"parameters\":");
        json.extend_from_slice(p);
    }
    json.extend_from_slice(b",\"outputs\":[");
    let mut any_binary = false;
    for (i, o) in outputs.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        json.extend_from_slice(b"{\"name\":");
        json_string(&mut json, o.name);
        json.extend_from_slice(b",\"datatype\":\"");
        json.extend_from_slice(DATATYPES.get(o.datatype as usize)?.as_bytes());
        json.extend_from_slice(b"\",\"shape\":[");
        for (k, d) in o.shape.iter().enumerate() {
            if k > 0 {
                json.push(b',');
            }
            json.extend_from_slice(d.to_string().as_bytes());
        }
        json.push(b']');
        if o.binary {
            any_binary = true;
            json.extend_from_slice(format!(",\"parameters\":{{\"binary_data_size\":{}}}}}", o.data.len()).as_bytes());
        } else {
            json.extend_from_slice(b",\"data\":");
            if !data_text(&mut json, o.datatype, o.data) {
                return None;
            }
            json.push(b'}');
        }
    }
    json.extend_from_slice(b"]}");
    if !any_binary {
        return Some(Encoded { body: json, header_len: None });
    }
    let header_len = json.len();
    for o in outputs.iter().filter(|o| o.binary) {
        json.extend_from_slice(o.data);
    }
    Some(Encoded { body: json, header_len: Some(header_len) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(datatype: u32, bytes: Vec<u8>) -> String {
        let mut out = Vec::new();
        assert!(data_text(&mut out, datatype, &bytes));
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn numbers_print_as_ecmascript_prints_them() {
        // What `String(x)` gives in JavaScript for each double (FP32 widened first).
        let f32s = [0.1f32, 1e21, 1e-7, -0.0, 123456789.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3.4028235e38];
        let bytes: Vec<u8> = f32s.iter().flat_map(|f| f.to_le_bytes()).collect();
        assert_eq!(
            printed(11, bytes),
            "[0.10000000149011612,1.0000000200408773e+21,1.0000000116860974e-7,0,123456792,NaN,Infinity,-Infinity,3.4028234663852886e+38]"
        );
        let f64s = [5e-324f64, 1e300, 0.5, -1.25e-10];
        assert_eq!(printed(12, f64s.iter().flat_map(|f| f.to_le_bytes()).collect()), "[5e-324,1e+300,0.5,-1.25e-10]");
        assert_eq!(
            printed(9, [i64::MIN, i64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect()),
            "[-9223372036854775808,9223372036854775807]"
        );
        assert_eq!(printed(1, vec![0, 1, 7]), "[false,true,true]");
    }

    #[test]
    fn a_buffer_that_is_not_whole_elements_is_refused() {
        let mut out = Vec::new();
        assert!(!data_text(&mut out, 8, &[1, 2, 3]));
    }

    #[test]
    fn strings_are_escaped_as_json_stringify_escapes_them() {
        let mut out = Vec::new();
        json_string(&mut out, "a\"b\\c\n\u{1}é\u{2028}");
        assert_eq!(String::from_utf8(out).expect("utf-8"), "\"a\\\"b\\\\c\\n\\u0001é\u{2028}\"");
    }
}
