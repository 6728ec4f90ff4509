//! Warden's in-process ONNX Runtime engine, with a narrow C ABI (native/include/warden/ort_engine.h)
//! for the addon's binding (native/src/addon/ort/binding.cc): sessions opened from model files,
//! and synchronous runs on raw tensor bytes on the calling thread. It exists for the ONNX Runtime
//! backend's inline runs (host/src/backends/onnxruntime/): onnxruntime-node spends more of a small
//! model's run in its JavaScript and N-API layers than in ONNX Runtime. The native data path
//! (warden-data-path, ort_exec.rs) runs the same sessions through [`WoSession::run`].
//!
//! The ABI follows warden-ffi's conventions (wasmtime's C API style): sessions cross as typed
//! references and boxes, a failing call returns a `WardenError` with a Triton code (INTERNAL for
//! ONNX Runtime's own failures, as Triton's onnxruntime backend reports them), and no panic
//! unwinds into C++. It reaches the addon through the warden-native-rs staticlib.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod session;

use session::RunInput;
use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use warden_ffi::{Code, WardenError, WithCode};

pub use session::{RunInput as EngineInput, RunOutput as EngineOutput, WoSession, MAX_RANK};

const ENGINE: &str = "the ONNX Runtime engine";

/// A C string argument, as UTF-8.
///
/// # Safety
/// `s` is null or a NUL-terminated string valid for `'a`.
unsafe fn utf8<'a>(s: *const c_char, what: &str) -> Result<&'a str, WardenError> {
    if s.is_null() {
        return Err(WardenError::invalid_arg(format!("{what} is null")));
    }
    // SAFETY: the caller's contract: a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map_err(|_| WardenError::invalid_arg(format!("{what} is not UTF-8")))
}

/// One input of `wo_session_run` (see ort_engine.h).
#[repr(C)]
pub struct WoInput {
    pub index: u32,
    pub elem_type: i32,
    pub rank: u32,
    pub shape: *const i64,
    pub data: *const u8,
    pub bytes: usize,
}

/// One output of `wo_session_run` (see ort_engine.h).
#[repr(C)]
pub struct WoOutput {
    pub value: *mut c_void,
    pub elem_type: i32,
    pub rank: u32,
    pub shape: [i64; MAX_RANK],
    pub data: *const u8,
    pub bytes: usize,
}

/// Loads ONNX Runtime from `lib_path` and creates the environment (once per process; later calls
/// return the first call's outcome). UNAVAILABLE when the library does not load.
///
/// # Safety
/// `lib_path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn wo_init(lib_path: *const c_char) -> Option<Box<WardenError>> {
    warden_ffi::guarded(ENGINE, || {
        // SAFETY: the caller's contract.
        let path = unsafe { utf8(lib_path, "the ONNX Runtime library path") }?;
        session::init(path).code(Code::Unavailable)
    })
}

/// Opens the model file at `path` into `*out`.
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn wo_session_open(
    path: *const c_char,
    intra: u32,
    inter: u32,
    out: &mut *mut WoSession,
) -> Option<Box<WardenError>> {
    warden_ffi::guarded(ENGINE, || {
        // SAFETY: the caller's contract.
        let path = unsafe { utf8(path, "the model path") }?;
        let s = WoSession::open(path, intra as usize, inter as usize).code(Code::Internal)?;
        *out = Box::into_raw(Box::new(s));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn wo_session_close(session: Option<Box<WoSession>>) {
    warden_ffi::free(session)
}

/// Number of inputs (`output` false) or outputs (`output` true).
#[no_mangle]
pub extern "C" fn wo_session_count(session: &WoSession, output: bool) -> usize {
    if output {
        session.output_names.len()
    } else {
        session.input_names.len()
    }
}

/// Name of input / output `i` (valid while the session lives), or NULL if out of range.
#[no_mangle]
pub extern "C" fn wo_session_name(session: &WoSession, output: bool, i: usize) -> *const c_char {
    let names = if output { &session.output_names } else { &session.input_names };
    names.get(i).map_or(ptr::null(), |n| n.as_ptr())
}

/// ONNX element type of input / output `i` (0: not a tensor of a type the engine passes).
#[no_mangle]
pub extern "C" fn wo_session_type(session: &WoSession, output: bool, i: usize) -> i32 {
    let types = if output { &session.output_types } else { &session.input_types };
    types.get(i).copied().unwrap_or(0)
}

/// Runs the session on `n_in` inputs, computing the `n_out` outputs at `out_index`, on the calling
/// thread. On success fills `outputs[0..n_out]`; the caller releases each `value` with
/// `wo_value_release` (its `data` is valid until then). On failure (INTERNAL) nothing is left to
/// release.
///
/// # Safety
/// `inputs` points at `n_in` inputs, each with `rank` dims at `shape` and `bytes` bytes at
/// `data`, valid for the call; `out_index` at `n_out` indices and `outputs` at `n_out` writable
/// outputs (or the count is 0).
#[no_mangle]
pub unsafe extern "C" fn wo_session_run(
    session: &WoSession,
    inputs: *const WoInput,
    n_in: usize,
    out_index: *const u32,
    n_out: usize,
    outputs: *mut WoOutput,
) -> Option<Box<WardenError>> {
    warden_ffi::guarded(ENGINE, || {
        // SAFETY: the caller's contract.
        let raw = unsafe { warden_ffi::slice(inputs, n_in) };
        let mut list = Vec::with_capacity(n_in);
        for i in raw {
            // `shape` holds `rank` values (ort_engine.h); WoSession::run refuses a rank over MAX_RANK
            // SAFETY: the caller's contract, for this input's shape and bytes.
            let (shape, data) =
                unsafe { (warden_ffi::slice(i.shape, i.rank as usize), warden_ffi::slice(i.data, i.bytes)) };
            list.push(RunInput { index: i.index as usize, elem_type: i.elem_type, shape, data });
        }
        // SAFETY: the caller's contract.
        let wanted: Vec<usize> = unsafe { warden_ffi::slice(out_index, n_out) }.iter().map(|&i| i as usize).collect();
        let results = session.run(&list, &wanted).code(Code::Internal)?;
        if results.len() > n_out {
            return Err(WardenError::internal("ONNX Runtime returned more outputs than asked for"));
        }
        for (k, r) in results.into_iter().enumerate() {
            // SAFETY: the caller's contract: `n_out` writable outputs at `outputs`, and k < n_out.
            let o = unsafe { &mut *outputs.add(k) };
            o.elem_type = r.elem_type;
            o.rank = r.shape.len() as u32;
            o.shape[..r.shape.len()].copy_from_slice(&r.shape);
            o.data = r.data;
            o.bytes = r.bytes;
            o.value = r.value.into_raw();
        }
        Ok(())
    })
}

/// Releases an output value of `wo_session_run` (any thread; NULL is ignored).
///
/// # Safety
/// `value` is NULL or an output's `value` not released before.
#[no_mangle]
pub unsafe extern "C" fn wo_value_release(value: *mut c_void) {
    // SAFETY: the caller's contract.
    warden_ffi::catch((), || unsafe { session::release_value(value) });
}
