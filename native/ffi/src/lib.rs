//! The C-ABI conventions of Warden's Rust engines (native/wasmtime, native/ort): a failing call
//! sets `*err` to a C string the caller frees with the engine's `*_string_free` ([`free_string`]),
//! and no panic unwinds into C++.
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Sets `*err` (when `err` is not null) to `msg` as a C string (NULs become spaces).
pub fn set_err(err: *mut *mut c_char, msg: String) {
    if !err.is_null() {
        let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        // SAFETY: the caller passes a valid out-pointer.
        unsafe { *err = c.into_raw() };
    }
}

/// Runs `f`; an error or a panic (reported as "`engine` failed (panic)") sets `*err` and gives None.
pub fn guarded<T>(err: *mut *mut c_char, engine: &str, f: impl FnOnce() -> Result<T, String>) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Some(v),
        Ok(Err(m)) => {
            set_err(err, m);
            None
        }
        Err(_) => {
            set_err(err, format!("{engine} failed (panic)"));
            None
        }
    }
}

/// Frees a string [`set_err`] made (null is ignored).
///
/// # Safety
/// `s` is null or came from [`set_err`], and is freed once.
pub unsafe fn free_string(s: *mut c_char) {
    if !s.is_null() {
        drop(CString::from_raw(s));
    }
}
