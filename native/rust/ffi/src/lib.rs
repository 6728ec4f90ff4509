//! The C-ABI conventions of Warden's Rust engines (wasmtime-engine, ort-engine), in the style of
//! wasmtime's own C API (`crates/c-api`):
//! - entry points are safe `extern "C" fn`s over typed references (`&T`, `&mut T`) and boxes
//!   (`Box<T>`, `Option<Box<T>>`) where C passes engine objects, so the compiler checks non-null
//!   and ownership; raw pointers remain only for real buffers (bytes, arrays, C strings);
//! - a call that can fail returns `Option<Box<WardenError>>` (C: `WardenError*`, NULL on
//!   success) and writes its result through an out-pointer; the error carries a Triton error code
//!   (`TRITONSERVER_Error_Code` numbering) and a message, so the addon turns it into the same JS
//!   error as a Triton error (declared in native/include/warden/engine_error.h);
//! - no panic unwinds into C++: [`guarded`] turns one into an INTERNAL error.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe, UnwindSafe};

/// A Triton error code, numbered as `TRITONSERVER_Error_Code` (warden/tritonserver.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Unknown = 0,
    Internal = 1,
    NotFound = 2,
    InvalidArg = 3,
    Unavailable = 4,
    Unsupported = 5,
    AlreadyExists = 6,
    Cancelled = 7,
}

/// An engine error as C sees it (`WardenError`): a code and a NUL-terminated message.
#[derive(Debug)]
pub struct WardenError {
    code: Code,
    message: CString,
}

impl WardenError {
    /// An error with `code` and `message` (a NUL in the message becomes a space).
    pub fn new(code: Code, message: impl Into<String>) -> WardenError {
        let message = message.into().replace('\0', " ");
        WardenError { code, message: CString::new(message).unwrap_or_default() }
    }

    pub fn internal(message: impl Into<String>) -> WardenError {
        WardenError::new(Code::Internal, message)
    }

    pub fn invalid_arg(message: impl Into<String>) -> WardenError {
        WardenError::new(Code::InvalidArg, message)
    }

    pub fn not_found(message: impl Into<String>) -> WardenError {
        WardenError::new(Code::NotFound, message)
    }

    pub fn unavailable(message: impl Into<String>) -> WardenError {
        WardenError::new(Code::Unavailable, message)
    }

    pub fn code(&self) -> Code {
        self.code
    }

    pub fn message(&self) -> &str {
        self.message.to_str().unwrap_or_default()
    }
}

/// What an engine's internal `Result<_, String>` becomes at its C ABI: the message with `code`.
pub trait WithCode<T> {
    fn code(self, code: Code) -> Result<T, WardenError>;
}

impl<T, E: std::fmt::Display> WithCode<T> for Result<T, E> {
    fn code(self, code: Code) -> Result<T, WardenError> {
        self.map_err(|e| WardenError::new(code, e.to_string()))
    }
}

/// Runs `f`: its error, or a panic (reported as INTERNAL "`engine` failed (panic)"), becomes the
/// error a C entry point returns; None when it succeeded.
pub fn guarded(engine: &str, f: impl FnOnce() -> Result<(), WardenError>) -> Option<Box<WardenError>> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(Box::new(e)),
        Err(_) => Some(Box::new(WardenError::internal(format!("{engine} failed (panic)")))),
    }
}

/// Runs `f` for an entry point that cannot report an error (a free, a query): a panic gives
/// `fallback` instead of unwinding into C++.
pub fn catch<T>(fallback: T, f: impl FnOnce() -> T + UnwindSafe) -> T {
    catch_unwind(f).unwrap_or(fallback)
}

/// Drops an object C hands back (NULL is ignored), never unwinding into C++.
pub fn free<T>(object: Option<Box<T>>) {
    if let Some(b) = object {
        let _ = catch_unwind(AssertUnwindSafe(move || drop(b)));
    }
}

/// A slice C passes as pointer and length (the wasmtime C API's `slice_from_raw_parts`): empty
/// for a zero length, whatever the pointer (C may pass NULL, which a Rust slice may not hold).
///
/// # Safety
/// When `len` is not zero, `ptr` points at `len` initialized values of `T` that stay valid and
/// unchanged for `'a`.
pub unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract: `len` values at a non-null `ptr`, valid for `'a`.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Bytes C passes as pointer and length, as UTF-8 (`what` names them in the error).
///
/// # Safety
/// As [`slice`].
pub unsafe fn utf8<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a str, WardenError> {
    // SAFETY: the caller's contract, as `slice`'s.
    let b = unsafe { slice(ptr, len) };
    std::str::from_utf8(b).map_err(|_| WardenError::invalid_arg(format!("{what} is not UTF-8")))
}

/// The error's code (`TRITONSERVER_Error_Code`).
#[no_mangle]
pub extern "C" fn warden_error_code(error: &WardenError) -> Code {
    error.code
}

/// The error's message, NUL-terminated, valid until `warden_error_delete`.
#[no_mangle]
pub extern "C" fn warden_error_message(error: &WardenError) -> *const c_char {
    error.message.as_ptr()
}

/// Frees an error (NULL is ignored).
#[no_mangle]
pub extern "C" fn warden_error_delete(error: Option<Box<WardenError>>) {
    free(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guarded_reports_errors_and_panics() {
        assert!(guarded("x", || Ok(())).is_none());
        let e = guarded("x", || Err(WardenError::invalid_arg("bad\0arg"))).unwrap();
        assert_eq!((e.code(), e.message()), (Code::InvalidArg, "bad arg"));
        let e = guarded("the engine", || panic!("boom")).unwrap();
        assert_eq!((e.code(), e.message()), (Code::Internal, "the engine failed (panic)"));
    }

    #[test]
    fn empty_slices_take_any_pointer() {
        // SAFETY: a zero length reads nothing.
        let s: &[u8] = unsafe { slice(std::ptr::null(), 0) };
        assert!(s.is_empty());
    }
}
