//! numpy's `.npy` constructions, through the `npyz` crate.
//!
//! Read: a 1-D array (shape `(n,)`, C or Fortran order alike) of float64, float32 or integers
//! (`i1`…`i8`, `u1`…`u8`), either byte order; float32 values and integers up to 2^53 convert to
//! float64 exactly, and a larger integer is accepted only when float64 holds it exactly. Any other
//! shape or dtype, a header that does not parse, a data section shorter or longer than the shape
//! says, is a malformed input naming the rule and what the file holds. The header's declared
//! length is checked against the bytes read before anything is allocated for it.
//!
//! Written: float64 little-endian (`<f8`), shape `(n,)`, format version 1.0: what `np.save`
//! writes for a float64 array, and what `np.load` reads back bit for bit.

use super::ParseError;
use npyz::{DType, NpyFile, TypeChar, TypeStr, WriterBuilder};
use std::io::Write;

/// The magic bytes that open every `.npy` file.
pub const MAGIC: &[u8] = b"\x93NUMPY";

/// Deepest bracket nesting accepted in a header (a plain array's header nests two deep, a
/// structured one a few more); bounds the header parser's recursion on hostile input.
const MAX_HEADER_NESTING: usize = 16;

/// The element types a construction `.npy` may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Element {
    F64,
    F32,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Element {
    /// The element type of a plain dtype, if a construction may hold it.
    fn of(type_str: &TypeStr) -> Option<Element> {
        Some(match (type_str.type_char(), type_str.size_field()) {
            (TypeChar::Float, 8) => Element::F64,
            (TypeChar::Float, 4) => Element::F32,
            (TypeChar::Int, 1) => Element::I8,
            (TypeChar::Int, 2) => Element::I16,
            (TypeChar::Int, 4) => Element::I32,
            (TypeChar::Int, 8) => Element::I64,
            (TypeChar::Uint, 1) => Element::U8,
            (TypeChar::Uint, 2) => Element::U16,
            (TypeChar::Uint, 4) => Element::U32,
            (TypeChar::Uint, 8) => Element::U64,
            _ => return None,
        })
    }
}

fn malformed(message: String) -> ParseError {
    ParseError::Malformed(message)
}

/// The values of a `.npy` file's bytes (see the module's rules).
pub fn parse_npy(bytes: &[u8]) -> Result<Vec<f64>, ParseError> {
    let data_start = header_end(bytes)?;
    // npyz multiplies the dimensions unchecked; a shape whose product overflows is refused first.
    if let Some(shape) = declared_shape(&bytes[..data_start]) {
        if shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .is_none()
        {
            return Err(not_one_dimensional(&shape));
        }
    }
    let file =
        NpyFile::new(bytes).map_err(|e| malformed(format!(".npy header does not parse: {e}")))?;
    let shape = file.shape().to_vec();
    let dtype = file.dtype();
    let element = match &dtype {
        DType::Plain(type_str) => Element::of(type_str),
        _ => None,
    };
    let Some(element) = element else {
        return Err(malformed(format!(
            ".npy dtype must be float64, float32 or an integer type; got {}",
            dtype.descr()
        )));
    };
    let &[n] = shape.as_slice() else {
        return Err(not_one_dimensional(&shape));
    };
    let item_size = dtype.num_bytes().unwrap_or(0) as u64;
    let found = (bytes.len() - data_start) as u64;
    let needed = n.checked_mul(item_size);
    if needed != Some(found) {
        let what = if needed.is_some_and(|needed| needed < found) {
            "has bytes past its data"
        } else {
            "is truncated"
        };
        return Err(malformed(format!(
            ".npy {what}: shape ({n},) of {} needs {} data bytes, the file has {found}",
            dtype.descr(),
            needed.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
        )));
    }
    let unreadable = |e: std::io::Error| malformed(format!(".npy data does not read: {e}"));
    let values = match element {
        Element::F64 => file.into_vec::<f64>().map_err(unreadable)?,
        Element::F32 => widen(file.into_vec::<f32>().map_err(unreadable)?),
        Element::I8 => widen(file.into_vec::<i8>().map_err(unreadable)?),
        Element::I16 => widen(file.into_vec::<i16>().map_err(unreadable)?),
        Element::I32 => widen(file.into_vec::<i32>().map_err(unreadable)?),
        Element::U8 => widen(file.into_vec::<u8>().map_err(unreadable)?),
        Element::U16 => widen(file.into_vec::<u16>().map_err(unreadable)?),
        Element::U32 => widen(file.into_vec::<u32>().map_err(unreadable)?),
        Element::I64 => exact_integers(file.into_vec::<i64>().map_err(unreadable)?, "int64")?,
        Element::U64 => exact_integers(file.into_vec::<u64>().map_err(unreadable)?, "uint64")?,
    };
    super::checked(values)
}

/// Values of a type that float64 holds exactly, as float64.
fn widen<T: Into<f64>>(values: Vec<T>) -> Vec<f64> {
    values.into_iter().map(Into::into).collect()
}

/// 64-bit integers as float64, refusing the first one float64 does not hold exactly.
fn exact_integers<T: Copy + Into<i128> + std::fmt::Display>(
    values: Vec<T>,
    dtype: &str,
) -> Result<Vec<f64>, ParseError> {
    let mut out = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        let wide: i128 = value.into();
        let x = wide as f64;
        if x as i128 != wide {
            return Err(malformed(format!(
                ".npy {dtype} values must convert to float64 exactly; index {i} holds {value}, \
                 which float64 rounds to {x:?} (save the array as float64)"
            )));
        }
        out.push(x);
    }
    Ok(out)
}

/// The offset of the data section: after the magic, the version, the header length and the
/// header, checked against the bytes present (so a header claiming 4 GiB allocates nothing) and
/// for its nesting depth.
fn header_end(bytes: &[u8]) -> Result<usize, ParseError> {
    if !bytes.starts_with(MAGIC) {
        return Err(malformed(
            ".npy file must start with the magic bytes \\x93NUMPY; it does not (truncated or \
             not a .npy file)"
                .into(),
        ));
    }
    let (length_bytes, prefix) = match bytes.get(6) {
        Some(1) => (2, 10),
        Some(2 | 3) => (4, 12),
        Some(version) => {
            return Err(malformed(format!(
                ".npy format version must be 1, 2 or 3; got {version}"
            )))
        }
        None => return Err(truncated_header(8, bytes.len())),
    };
    if bytes.len() < prefix {
        return Err(truncated_header(prefix, bytes.len()));
    }
    let mut length = [0u8; 4];
    length[..length_bytes].copy_from_slice(&bytes[prefix - length_bytes..prefix]);
    let end = prefix.saturating_add(u32::from_le_bytes(length) as usize);
    if end > bytes.len() {
        return Err(truncated_header(end, bytes.len()));
    }
    let mut depth = 0usize;
    for &b in &bytes[prefix..end] {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_NESTING {
            return Err(malformed(format!(
                ".npy header must nest at most {MAX_HEADER_NESTING} brackets deep; it nests deeper"
            )));
        }
    }
    Ok(end)
}

fn truncated_header(needed: usize, found: usize) -> ParseError {
    malformed(format!(
        ".npy is truncated: its header needs {needed} bytes, the file has {found}"
    ))
}

fn not_one_dimensional(shape: &[u64]) -> ParseError {
    malformed(format!(
        ".npy array must be 1-D, shape (n,); got shape {}",
        shape_text(shape)
    ))
}

/// The dimensions after `'shape':` in a header, when they read as a tuple or list of integers.
fn declared_shape(header: &[u8]) -> Option<Vec<u64>> {
    let text = String::from_utf8_lossy(header);
    let after_key = text
        .split_once("'shape'")
        .or_else(|| text.split_once("\"shape\""))?
        .1;
    let tuple = after_key.trim_start().strip_prefix(':')?.trim_start();
    let inner = tuple.strip_prefix(['(', '['])?;
    let inner = &inner[..inner.find([')', ']'])?];
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().ok())
        .collect()
}

/// A shape as Python prints it: `()`, `(5,)`, `(2, 3)`.
fn shape_text(shape: &[u64]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", dims.join(", "))
        }
    }
}

/// Writes `values` to `out` as a float64 `.npy` of shape `(n,)`.
pub fn write_npy(values: &[f64], out: &mut impl Write) -> std::io::Result<()> {
    let mut writer = npyz::WriteOptions::<f64>::new()
        .default_dtype()
        .shape(&[values.len() as u64])
        .writer(out)
        .begin_nd()?;
    writer.extend(values.iter().copied())?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy_of(values: &[f64]) -> Vec<u8> {
        let mut out = Vec::new();
        write_npy(values, &mut out).unwrap();
        out
    }

    /// A `.npy` with this header dictionary and data, version 1.0, padded as numpy pads it.
    fn npy_with(header: &str, data: &[u8]) -> Vec<u8> {
        let mut text = header.to_string();
        while !(10 + text.len() + 1).is_multiple_of(64) {
            text.push(' ');
        }
        text.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([1, 0]);
        out.extend((text.len() as u16).to_le_bytes());
        out.extend(text.as_bytes());
        out.extend(data);
        out
    }

    fn malformed_message(bytes: &[u8]) -> String {
        match parse_npy(bytes) {
            Err(ParseError::Malformed(m)) => m,
            other => panic!("expected malformed, got {other:?}"),
        }
    }

    #[test]
    fn float64_round_trips_bit_for_bit() {
        let values = [0.1, 1.0 / 3.0, 5e-324, -0.0, f64::MAX, 7.0];
        let back = parse_npy(&npy_of(&values)).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }

    #[test]
    fn writes_what_np_save_writes() {
        let bytes = npy_of(&[1.0, 2.0]);
        assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert!(header.contains("'descr': '<f8'"), "{header}");
        assert!(header.contains("'fortran_order': False"), "{header}");
        assert!(header.contains("'shape': (2,"), "{header}");
        assert_eq!((10 + header_len) % 64, 0);
        assert_eq!(bytes.len(), 10 + header_len + 16);
    }

    #[test]
    fn other_element_types_convert_exactly() {
        let f32s: Vec<u8> = [0.1f32, -2.5]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
        let back = parse_npy(&npy_with(header, &f32s)).unwrap();
        assert_eq!(back, vec![f64::from(0.1f32), -2.5]);
        let big_endian: Vec<u8> = [3.25f64].iter().flat_map(|x| x.to_be_bytes()).collect();
        let header = "{'descr': '>f8', 'fortran_order': True, 'shape': (1,), }";
        assert_eq!(
            parse_npy(&npy_with(header, &big_endian)).unwrap(),
            vec![3.25]
        );
        let ints: Vec<u8> = [-3i64, 1 << 60]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
        let back = parse_npy(&npy_with(header, &ints)).unwrap();
        assert_eq!(back, vec![-3.0, (1u64 << 60) as f64]);
        let header = "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }";
        assert_eq!(
            parse_npy(&npy_with(header, &[0, 7, 255])).unwrap(),
            vec![0.0, 7.0, 255.0]
        );
    }

    #[test]
    fn an_integer_float64_cannot_hold_is_refused_naming_index_and_value() {
        let ints: Vec<u8> = [1u64, (1 << 53) + 1]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let header = "{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }";
        let m = malformed_message(&npy_with(header, &ints));
        assert!(m.contains("index 1 holds 9007199254740993"), "{m}");
    }

    #[test]
    fn other_shapes_and_dtypes_are_refused_naming_what_the_file_holds() {
        let data = [0u8; 48];
        let m = malformed_message(&npy_with(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }",
            &data,
        ));
        assert!(m.contains("1-D") && m.contains("(2, 3)"), "{m}");
        let m = malformed_message(&npy_with(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
            &data[..8],
        ));
        assert!(m.contains("got shape ()"), "{m}");
        for descr in ["<c16", "<f2", "|b1", "<U3", "<M8[s]"] {
            let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1,), }}");
            let m = malformed_message(&npy_with(&header, &data[..16]));
            assert!(
                m.contains("dtype must be float64") && m.contains(descr),
                "{m}"
            );
        }
        let m = malformed_message(&npy_with(
            "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }",
            &data[..8],
        ));
        assert!(m.contains("dtype must be float64"), "{m}");
    }

    #[test]
    fn truncated_and_overlong_files_are_refused() {
        let whole = npy_of(&[1.0, 2.0, 3.0]);
        let m = malformed_message(&whole[..whole.len() - 3]);
        assert!(
            m.contains("truncated") && m.contains("needs 24 data bytes"),
            "{m}"
        );
        assert!(malformed_message(&whole[..40]).contains("header needs 128 bytes"));
        assert!(malformed_message(&whole[..7]).contains("header needs"));
        assert!(malformed_message(&whole[..4]).contains("magic bytes"));
        let mut longer = whole.clone();
        longer.push(0);
        assert!(malformed_message(&longer).contains("past its data"));
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }";
        assert!(malformed_message(&npy_with(header, &[])).contains("more than 2^64"));
        let header =
            "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }";
        let m = malformed_message(&npy_with(header, &[]));
        assert!(
            m.contains("1-D") && m.contains("(4294967296, 4294967296)"),
            "{m}"
        );
    }

    #[test]
    fn hostile_headers_are_refused_before_they_cost_anything() {
        let mut huge = MAGIC.to_vec();
        huge.extend([2, 0]);
        huge.extend(u32::MAX.to_le_bytes());
        assert!(malformed_message(&huge).contains("header needs 4294967307 bytes"));
        let deep = format!("{}{}", "(".repeat(10_000), ")".repeat(10_000));
        assert!(malformed_message(&npy_with(&deep, &[])).contains("nest at most"));
        assert!(malformed_message(&npy_with("{'descr': '<f8'", &[])).contains("does not parse"));
        let mut version = npy_of(&[1.0]);
        version[6] = 9;
        assert!(malformed_message(&version).contains("version must be 1, 2 or 3; got 9"));
    }

    #[test]
    fn an_empty_array_has_no_values() {
        let header = "{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }";
        match parse_npy(&npy_with(header, &[])) {
            Err(ParseError::Invalid(v)) => assert!(v.rule.contains("no values")),
            other => panic!("{other:?}"),
        }
    }
}
