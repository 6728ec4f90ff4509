//! The one Rust static library the Node addon links (`libwarden_native_rs.a`, built by
//! scripts/build-native.mjs): it carries the C ABIs of Warden's Rust engines, declared in
//! native/include/warden/:
//! - `engine_error.h`: the error object every engine returns ([`warden_ffi`]);
//! - `wasmtime_engine.h`: the wasmtime sandbox engine, `ww_*` ([`warden_wasmtime_engine`]);
//! - `ort_engine.h`: the in-process ONNX Runtime engine, `wo_*` ([`warden_ort_engine`]).
//!
//! One library rather than one per engine, because two Rust staticlibs in one shared object
//! would each carry a copy of std. The re-exports keep the crates (and so their `#[no_mangle]`
//! functions) in the link.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub use warden_data_path;
pub use warden_ffi;
pub use warden_ort_engine;
pub use warden_wasmtime_engine;
