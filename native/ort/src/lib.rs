//! Warden's in-process ONNX Runtime engine, with a narrow C ABI (../include/warden_ort.h) for the
//! addon's binding (native/src/ort/binding.cc): sessions opened from model files, and synchronous
//! runs on raw tensor bytes on the calling thread. It exists for the ONNX Runtime backend's inline
//! runs (host/src/backends/onnxruntime/): onnxruntime-node spends more of a small model's run in
//! its JavaScript and N-API layers than in ONNX Runtime.
//!
//! Every entry point catches panics (a `wo_*` call never unwinds into C++); errors are returned as
//! C strings the caller frees with `wo_string_free`.
mod session;

use session::{EngineSession, RunInput};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

pub use session::MAX_RANK;

fn guarded<T>(err: *mut *mut c_char, f: impl FnOnce() -> Result<T, String>) -> Option<T> {
    warden_ffi::guarded(err, "the ONNX Runtime engine", f)
}

unsafe fn utf8<'a>(s: *const c_char) -> Result<&'a str, String> {
    if s.is_null() {
        return Err("null string".into());
    }
    CStr::from_ptr(s).to_str().map_err(|_| "string is not UTF-8".into())
}

/// One input of `wo_session_run` (see warden_ort.h).
#[repr(C)]
pub struct WoInput {
    pub index: u32,
    pub elem_type: i32,
    pub rank: u32,
    pub shape: *const i64,
    pub data: *const u8,
    pub bytes: usize,
}

/// One output of `wo_session_run` (see warden_ort.h).
#[repr(C)]
pub struct WoOutput {
    pub value: *mut c_void,
    pub elem_type: i32,
    pub rank: u32,
    pub shape: [i64; MAX_RANK],
    pub data: *const u8,
    pub bytes: usize,
}

#[no_mangle]
pub unsafe extern "C" fn wo_string_free(s: *mut c_char) {
    warden_ffi::free_string(s)
}

/// Loads ONNX Runtime from `lib_path` and creates the environment (once per process).
#[no_mangle]
pub unsafe extern "C" fn wo_init(lib_path: *const c_char, err: *mut *mut c_char) -> bool {
    guarded(err, || session::init(utf8(lib_path)?)).is_some()
}

/// Opens the model file at `path`; NULL on failure.
#[no_mangle]
pub unsafe extern "C" fn wo_session_open(path: *const c_char, intra: u32, inter: u32, err: *mut *mut c_char) -> *mut EngineSession {
    guarded(err, || Ok(Box::into_raw(Box::new(EngineSession::open(utf8(path)?, intra as usize, inter as usize)?)))).unwrap_or(ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn wo_session_close(s: *mut EngineSession) {
    if !s.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(s))));
    }
}

/// Number of inputs (`output` false) or outputs (`output` true).
#[no_mangle]
pub unsafe extern "C" fn wo_session_count(s: *const EngineSession, output: bool) -> usize {
    if output { (*s).output_names.len() } else { (*s).input_names.len() }
}

/// Name of input / output `i` (valid while the session lives), or NULL if out of range.
#[no_mangle]
pub unsafe extern "C" fn wo_session_name(s: *const EngineSession, output: bool, i: usize) -> *const c_char {
    let names = if output { &(*s).output_names } else { &(*s).input_names };
    names.get(i).map_or(ptr::null(), |n| n.as_ptr())
}

/// ONNX element type of input / output `i` (0: not a tensor of a type the engine passes).
#[no_mangle]
pub unsafe extern "C" fn wo_session_type(s: *const EngineSession, output: bool, i: usize) -> i32 {
    let types = if output { &(*s).output_types } else { &(*s).input_types };
    types.get(i).copied().unwrap_or(0)
}

/// Runs the session on `n_in` inputs, computing the `n_out` outputs at `out_index`, on the calling
/// thread. On success fills `outputs[0..n_out]`; the caller releases each `value` with
/// `wo_value_release` (its `data` is valid until then). On failure nothing is left to release.
#[no_mangle]
pub unsafe extern "C" fn wo_session_run(
    s: *const EngineSession,
    inputs: *const WoInput,
    n_in: usize,
    out_index: *const u32,
    n_out: usize,
    outputs: *mut WoOutput,
    err: *mut *mut c_char,
) -> bool {
    guarded(err, || {
        let raw = if n_in == 0 { &[][..] } else { std::slice::from_raw_parts(inputs, n_in) };
        let mut list = Vec::with_capacity(n_in);
        for i in raw {
            // `shape` holds `rank` values (warden_ort.h); EngineSession::run refuses a rank over MAX_RANK
            list.push(RunInput {
                index: i.index as usize,
                elem_type: i.elem_type,
                shape: if i.rank == 0 { &[] } else { std::slice::from_raw_parts(i.shape, i.rank as usize) },
                data: if i.bytes == 0 { &[] } else { std::slice::from_raw_parts(i.data, i.bytes) },
            });
        }
        let wanted: Vec<usize> = if n_out == 0 { vec![] } else { std::slice::from_raw_parts(out_index, n_out).iter().map(|&i| i as usize).collect() };
        let results = (*s).run(&list, &wanted)?;
        for (k, r) in results.into_iter().enumerate() {
            let o = &mut *outputs.add(k);
            o.elem_type = r.elem_type;
            o.rank = r.shape.len() as u32;
            o.shape[..r.shape.len()].copy_from_slice(&r.shape);
            o.data = r.data;
            o.bytes = r.bytes;
            o.value = r.value.into_raw();
        }
        Ok(())
    })
    .is_some()
}

/// Releases an output value of `wo_session_run` (any thread).
#[no_mangle]
pub unsafe extern "C" fn wo_value_release(value: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| session::release_value(value)));
}
