//! The backend host as the data path sees it: the few `WARDEN_*` / `TRITONSERVER_*` functions of
//! libtritonserver.so it calls (native/include/warden/host.h, tritonserver.h), passed in as a
//! table of function pointers by the addon (`WdHostApi`), so this crate links without the library
//! and its tests can stand in for a backend.
use std::ffi::{c_char, c_void, CStr};

/// `TRITONSERVER_Error*`, `TRITONSERVER_InferenceResponse*`, `TRITONBACKEND_ModelInstance*`: opaque.
pub type Opaque = c_void;

/// `WARDEN_InputDesc` (host.h).
#[repr(C)]
pub struct InputDesc {
    pub name: *const c_char,
    pub datatype: u32,
    pub shape: *const i64,
    pub dims_count: u32,
    pub data: *const c_void,
    pub byte_size: u64,
}

/// `WARDEN_ParamDesc` (host.h); the data path sends none.
#[repr(C)]
pub struct ParamDesc {
    pub key: *const c_char,
    pub kind: u32,
    pub string_value: *const c_char,
    pub int_value: i64,
    pub bool_value: bool,
    pub double_value: f64,
}

/// `WARDEN_RequestStats` (host.h): CLOCK_MONOTONIC ns the backend reported.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct RequestStats {
    pub reported: bool,
    pub success: bool,
    pub exec_start_ns: u64,
    pub compute_start_ns: u64,
    pub compute_end_ns: u64,
    pub exec_end_ns: u64,
    pub rescheduled: bool,
}

/// `WARDEN_ExecStats` (host.h).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ExecStats {
    pub reported: bool,
    pub batch_size: u64,
    pub exec_start_ns: u64,
    pub compute_start_ns: u64,
    pub compute_end_ns: u64,
    pub exec_end_ns: u64,
    pub returned_ns: u64,
}

pub type ResponseFn = extern "C" fn(userp: *mut c_void, response: *mut Opaque, flags: u32);
pub type ReleaseFn = extern "C" fn(userp: *mut c_void, stats: *const RequestStats);
pub type ExecDoneFn = extern "C" fn(userp: *mut c_void, error: *mut Opaque, stats: *const ExecStats);

/// `WARDEN_RequestDesc` (host.h).
#[repr(C)]
pub struct RequestDesc {
    pub id: *const c_char,
    pub correlation_id: u64,
    pub correlation_id_string: *const c_char,
    pub flags: u32,
    pub timeout_us: u64,
    pub priority: u64,
    pub cancelled: bool,
    pub inputs: *const InputDesc,
    pub input_count: u32,
    pub requested_outputs: *const *const c_char,
    pub requested_output_count: u32,
    pub parameters: *const ParamDesc,
    pub parameter_count: u32,
    pub response_fn: ResponseFn,
    pub release_fn: ReleaseFn,
    pub userp: *mut c_void,
    pub reschedulable: bool,
}

/// `TRITONSERVER_RESPONSE_COMPLETE_FINAL`.
pub const RESPONSE_FINAL: u32 = 1;
/// `WARDEN_RESPONSE_CLOSED` (host.h): a rescheduled request that will send nothing more.
pub const RESPONSE_CLOSED: u32 = 0x8000_0000;
/// `TRITONSERVER_MEMORY_CPU`.
pub const MEMORY_CPU: u32 = 0;

/// The functions of libtritonserver.so the data path calls (`WdHostApi` in warden/data_path.h).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HostApi {
    pub instance_execute: extern "C" fn(
        instance: *mut Opaque,
        requests: *const RequestDesc,
        count: u32,
        done: ExecDoneFn,
        userp: *mut c_void,
    ) -> *mut Opaque,
    pub response_error: extern "C" fn(response: *mut Opaque) -> *mut Opaque,
    pub response_output_count: extern "C" fn(response: *mut Opaque, count: *mut u32) -> *mut Opaque,
    #[allow(clippy::type_complexity, reason = "the C signature of TRITONSERVER_InferenceResponseOutput")]
    pub response_output: extern "C" fn(
        response: *mut Opaque,
        index: u32,
        name: *mut *const c_char,
        datatype: *mut u32,
        shape: *mut *const i64,
        dim_count: *mut u64,
        base: *mut *const c_void,
        byte_size: *mut usize,
        memory_type: *mut u32,
        memory_type_id: *mut i64,
        userp: *mut *mut c_void,
    ) -> *mut Opaque,
    pub response_delete: extern "C" fn(response: *mut Opaque) -> *mut Opaque,
    pub error_code: extern "C" fn(error: *mut Opaque) -> u32,
    pub error_message: extern "C" fn(error: *mut Opaque) -> *const c_char,
    pub error_delete: extern "C" fn(error: *mut Opaque),
}

/// A Triton error taken from the host: its code (`TRITONSERVER_Error_Code`) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostError {
    pub code: u32,
    pub message: String,
}

impl HostApi {
    /// Reads an owned `TRITONSERVER_Error*` and frees it; None for NULL.
    pub fn take_error(&self, e: *mut Opaque) -> Option<HostError> {
        let read = self.read_error(e)?;
        (self.error_delete)(e);
        Some(read)
    }

    /// Reads an error without freeing it (one a response owns); None for NULL.
    pub fn read_error(&self, e: *mut Opaque) -> Option<HostError> {
        if e.is_null() {
            return None;
        }
        let code = (self.error_code)(e);
        let msg = (self.error_message)(e);
        let message = if msg.is_null() {
            String::new()
        } else {
            // SAFETY: the host returns a NUL-terminated message owned by `e`, alive until `e` is
            // deleted: by take_error after this copy, or by the response that owns it.
            unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned()
        };
        Some(HostError { code, message })
    }
}
