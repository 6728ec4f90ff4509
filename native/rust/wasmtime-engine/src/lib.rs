//! Warden's wasmtime sandbox engine, with a narrow C ABI (native/include/warden/wasmtime_engine.h)
//! for the addon's binding (native/src/addon/wasmtime/binding.cc): engines, compiled components
//! (compile, serialize, checked deserialize) and instances, each on its own native thread.
//! Results come back as messages through the notify function the addon gives the engine (its
//! wake-up path).
//!
//! The ABI follows warden-ffi's conventions (wasmtime's C API style): objects cross as typed
//! references and boxes, a failing call returns a `WardenError` with a Triton code, and no panic
//! unwinds into C++. It reaches the addon through the warden-native-rs staticlib.
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

mod bindings;
mod cwasm;
mod descriptor;
pub mod direct;
mod engine;
mod ffi_types;
mod host;
mod inference;
mod instance;
mod wake;
mod wasi;
mod wire;

use engine::{EngineOptions, WwComponent, WwEngine};
use ffi_types::{NotifyFn, Reply, WwBuffer, WwMessage};
use instance::InstanceParams;
pub use instance::WwInstance;
use std::ffi::c_void;
use std::ptr;
use warden_ffi::{Code, WardenError, WithCode};

const ENGINE: &str = "the wasmtime engine";

/// Runs an entry point's body (warden_ffi::guarded).
fn guarded(f: impl FnOnce() -> Result<(), WardenError>) -> Option<Box<WardenError>> {
    warden_ffi::guarded(ENGINE, f)
}

/// JSON C passes as pointer and length.
///
/// # Safety
/// As [`warden_ffi::slice`].
unsafe fn json_of(p: *const u8, len: usize) -> Result<serde_json::Value, WardenError> {
    // SAFETY: the caller's contract.
    let bytes = unsafe { warden_ffi::slice(p, len) };
    serde_json::from_slice(bytes).map_err(|e| WardenError::invalid_arg(format!("bad JSON from the host: {e}")))
}

/// Arrays of `n` buffer pointers and lengths C passes, as (address, length) pairs.
///
/// # Safety
/// When `n` is not zero, `ptrs` and `lens` each point at `n` values.
unsafe fn buffer_list(ptrs: *const *const u8, lens: *const usize, n: usize) -> Vec<(*const u8, usize)> {
    // SAFETY: the caller's contract.
    let (ptrs, lens) = unsafe { (warden_ffi::slice(ptrs, n), warden_ffi::slice(lens, n)) };
    ptrs.iter().copied().zip(lens.iter().copied()).collect()
}

/// Copies `n` buffers C passes (one copy: from JS memory into buffers the native thread owns).
///
/// # Safety
/// As [`buffer_list`], and buffer `k` is `lens[k]` readable bytes at `ptrs[k]`.
unsafe fn copy_buffers(ptrs: *const *const u8, lens: *const usize, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    // SAFETY: the caller's contract.
    for (p, len) in unsafe { buffer_list(ptrs, lens, n) } {
        // SAFETY: the caller's contract: `len` readable bytes at `p`.
        out.push(unsafe { warden_ffi::slice(p, len) }.to_vec());
    }
    out
}

/// A new engine; messages of its instances go to `notify(ctx, msg)` from any thread.
///
/// # Safety
/// `json` points at `len` bytes (or `len` is 0); `notify` may be called with `ctx` from any
/// thread until the engine is freed.
#[no_mangle]
pub unsafe extern "C" fn ww_engine_new(
    json: *const u8,
    len: usize,
    notify: NotifyFn,
    ctx: *mut c_void,
    out: &mut *mut WwEngine,
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let opts = EngineOptions::from_json(&unsafe { json_of(json, len) }?);
        let e = WwEngine::new(opts, ffi_types::Notifier::new(notify, ctx))
            .map_err(|e| format!("{e:#}"))
            .code(Code::InvalidArg)?;
        *out = Box::into_raw(Box::new(e));
        Ok(())
    })
}

/// Frees an engine (after every instance reported `EXITED` and every component was freed).
#[no_mangle]
pub extern "C" fn ww_engine_free(engine: Option<Box<WwEngine>>) {
    warden_ffi::free(engine)
}

/// The engine's compile-cache key part (hex, `*len` bytes, not NUL-terminated; valid while the
/// engine lives).
#[no_mangle]
pub extern "C" fn ww_engine_config_key(engine: &WwEngine, len: &mut usize) -> *const u8 {
    *len = engine.config_key.len();
    engine.config_key.as_ptr()
}

/// Compiles a component (blocking: run it off the JS thread). INVALID_ARG when wasmtime refuses
/// it (not a component, or one this engine cannot link).
///
/// # Safety
/// `bytes` points at `len` bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn ww_component_compile(
    engine: &WwEngine,
    bytes: *const u8,
    len: usize,
    out: &mut *mut WwComponent,
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let bytes = unsafe { warden_ffi::slice(bytes, len) };
        let c = engine.compile(bytes).map_err(|e| format!("{e:#}")).code(Code::InvalidArg)?;
        *out = Box::into_raw(Box::new(c));
        Ok(())
    })
}

/// Loads the compile-cache entry at `path` (UTF-8, `path_len` bytes) if the keyed MAC of its
/// bytes (cwasm.rs) is `mac` — checked over the bytes, or vouched for by the entry's verified
/// stamp — and sets `*check` (1 MAC over the bytes, 2 verified stamp); no read into memory,
/// wasmtime maps the checked file. After a full check of a file last changed at least
/// `settle_ms` ago its stamp is recorded. On failure sets `*miss` (1 absent, 2 unreadable, 3 MAC
/// mismatch, 4 refused by wasmtime) and returns the error (NOT_FOUND for an absent entry).
/// Blocking: run it off the JS thread.
///
/// # Safety
/// `path` points at `path_len` bytes and `hash` at `hash_len` bytes (or the length is 0).
#[no_mangle]
pub unsafe extern "C" fn ww_component_load_cached(
    engine: &WwEngine,
    path: *const u8,
    path_len: usize,
    key: &[u8; cwasm::KEY_LEN],
    hash: *const u8,
    hash_len: usize,
    mac: &[u8; cwasm::KEY_LEN],
    max_bytes: u64,
    settle_ms: u64,
    check: &mut i32,
    miss: &mut i32,
    out: &mut *mut WwComponent,
) -> Option<Box<WardenError>> {
    *miss = cwasm::Miss::Unreadable as i32;
    guarded(|| {
        // SAFETY: the caller's contract.
        let path = unsafe { warden_ffi::utf8(path, path_len, "the cache path") }?;
        // SAFETY: the caller's contract.
        let hash = unsafe { warden_ffi::utf8(hash, hash_len, "the component hash") }?;
        let settle = std::time::Duration::from_millis(settle_ms);
        match cwasm::load_checked(engine, std::path::Path::new(path), key, hash, mac, max_bytes, settle) {
            Ok((c, how)) => {
                *check = how as i32;
                *out = Box::into_raw(Box::new(c));
                Ok(())
            }
            Err((m, msg)) => {
                *miss = m as i32;
                let code = if m == cwasm::Miss::Absent { Code::NotFound } else { Code::Internal };
                Err(WardenError::new(code, msg))
            }
        }
    })
}

/// The compile-cache MAC (32 bytes into `out`) of a serialized component for `hash` under this
/// engine's configuration and the cache `key`.
///
/// # Safety
/// `hash` points at `hash_len` bytes and `payload` at `len` bytes (or the length is 0).
#[no_mangle]
pub unsafe extern "C" fn ww_cwasm_mac(
    engine: &WwEngine,
    key: &[u8; cwasm::KEY_LEN],
    hash: *const u8,
    hash_len: usize,
    payload: *const u8,
    len: usize,
    out: &mut [u8; cwasm::KEY_LEN],
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let hash = unsafe { warden_ffi::utf8(hash, hash_len, "the component hash") }?;
        // SAFETY: the caller's contract.
        let payload = unsafe { warden_ffi::slice(payload, len) };
        *out = cwasm::mac(key, hash, &engine.config_key, payload);
        Ok(())
    })
}

/// Serializes a compiled component (the `.cwasm` payload) into a new buffer.
#[no_mangle]
pub extern "C" fn ww_component_serialize(component: &WwComponent, out: &mut *mut WwBuffer) -> Option<Box<WardenError>> {
    guarded(|| {
        let bytes = component.component.serialize().map_err(|e| format!("{e:#}")).code(Code::Internal)?;
        *out = Box::into_raw(Box::new(WwBuffer(bytes)));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn ww_component_free(component: Option<Box<WwComponent>>) {
    warden_ffi::free(component)
}

/// Linear memories a component's core modules define; -1 for a malformed binary.
///
/// # Safety
/// `bytes` points at `len` bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn ww_count_memories(bytes: *const u8, len: usize) -> i64 {
    // SAFETY: the caller's contract.
    let bytes = unsafe { warden_ffi::slice(bytes, len) };
    warden_ffi::catch(-1, || engine::count_memories(bytes).map(i64::from).unwrap_or(-1))
}

/// Starts an instance thread; it reports `READY`, `CREATE_ERROR` or `TRAP` for its start-up.
///
/// # Safety
/// `json` points at `len` bytes (or `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn ww_instance_new(
    engine: &WwEngine,
    component: &WwComponent,
    id: u64,
    json: *const u8,
    len: usize,
    out: &mut *mut WwInstance,
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let params = InstanceParams::from_json(&unsafe { json_of(json, len) }?).code(Code::InvalidArg)?;
        let e = engine;
        let i = WwInstance::start(
            e.engine.clone(),
            e.ticker.clone(),
            e.tick_ms,
            e.fuel,
            component.pre.clone(),
            e.notifier.clone(),
            id,
            params,
        )
        .map_err(|err| format!("cannot start a sandbox thread: {err}"))
        .code(Code::Internal)?;
        *out = Box::into_raw(Box::new(i));
        Ok(())
    })
}

/// Queues an execute: a requests descriptor (descriptor.rs; copied) and the input buffers it
/// indexes. Sets `*queued` to false if the thread ended.
///
/// # Safety
/// `desc` points at `len` bytes; `ptrs` and `lens` at `n` values each, buffer `k` being `lens[k]`
/// bytes at `ptrs[k]`. The buffers are NOT copied: the caller keeps them alive and unchanged
/// until the execute's terminal message (`DONE`, `TRAP`, `RESPAWN_FAILED`) or the thread's
/// `EXITED`; wasmtime lowers them into the guest (the one copy in).
#[no_mangle]
pub unsafe extern "C" fn ww_instance_execute(
    instance: &WwInstance,
    desc: *const u8,
    len: usize,
    ptrs: *const *const u8,
    lens: *const usize,
    n: usize,
    queued: &mut bool,
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let (desc, bufs) = unsafe { (warden_ffi::slice(desc, len), buffer_list(ptrs, lens, n)) };
        let bufs = bufs.into_iter().map(|(p, n)| (p as usize, n)).collect();
        *queued = instance.execute(desc.to_vec(), instance::HostBuffers(bufs));
        Ok(())
    })
}

/// Answers the instance's pending `CALL` (the buffers are copied). Sets `*delivered` to false if
/// the thread ended.
///
/// # Safety
/// `json` points at `len` bytes; `ptrs` and `lens` at `n` values each, buffer `k` being
/// `lens[k]` bytes at `ptrs[k]` (valid for the call).
#[no_mangle]
pub unsafe extern "C" fn ww_instance_reply(
    instance: &WwInstance,
    json: *const u8,
    len: usize,
    ptrs: *const *const u8,
    lens: *const usize,
    n: usize,
    delivered: &mut bool,
) -> Option<Box<WardenError>> {
    guarded(|| {
        // SAFETY: the caller's contract.
        let json = unsafe { json_of(json, len) }?;
        // SAFETY: the caller's contract.
        let bufs = unsafe { copy_buffers(ptrs, lens, n) };
        *delivered = instance.reply(Reply { json, bufs });
        Ok(())
    })
}

/// Asks the instance thread to end and frees the handle; the thread reports `EXITED`.
#[no_mangle]
pub extern "C" fn ww_instance_free(instance: Option<Box<WwInstance>>) {
    if let Some(i) = instance {
        warden_ffi::catch((), std::panic::AssertUnwindSafe(move || i.stop()));
    }
}

#[no_mangle]
pub extern "C" fn ww_message_instance(message: &WwMessage) -> u64 {
    message.instance
}

#[no_mangle]
pub extern "C" fn ww_message_kind(message: &WwMessage) -> u32 {
    message.kind
}

/// The message's JSON (`*len` bytes, not NUL-terminated), valid until `ww_message_free`.
#[no_mangle]
pub extern "C" fn ww_message_json(message: &WwMessage, len: &mut usize) -> *const u8 {
    *len = message.json.len();
    message.json.as_ptr()
}

#[no_mangle]
pub extern "C" fn ww_message_buffer_count(message: &WwMessage) -> usize {
    message.bufs.len()
}

/// Takes buffer `i` out of the message; NULL if already taken (or out of range).
#[no_mangle]
pub extern "C" fn ww_message_take_buffer(message: &mut WwMessage, i: usize) -> Option<Box<WwBuffer>> {
    message.bufs.get_mut(i).and_then(Option::take).map(Box::new)
}

#[no_mangle]
pub extern "C" fn ww_message_free(message: Option<Box<WwMessage>>) {
    warden_ffi::free(message)
}

/// The buffer's bytes (`*len` of them), valid and in place until `ww_buffer_free`.
#[no_mangle]
pub extern "C" fn ww_buffer_data(buffer: &mut WwBuffer, len: &mut usize) -> *mut u8 {
    *len = buffer.0.len();
    if buffer.0.is_empty() {
        ptr::null_mut()
    } else {
        buffer.0.as_mut_ptr()
    }
}

#[no_mangle]
pub extern "C" fn ww_buffer_free(buffer: Option<Box<WwBuffer>>) {
    warden_ffi::free(buffer)
}
