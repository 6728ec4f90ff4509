//! Warden's wasmtime sandbox engine as a static library with a narrow C ABI
//! (../include/warden_wasmtime.h), linked into the cmake-js addon (native/src/wasmtime/): engines,
//! compiled components (compile, serialize, checked deserialize) and instances, each on its own
//! native thread. Results come back as messages through the notify function the addon gives the
//! engine (its thread-safe function: the addon's wake-up path).
//!
//! Every entry point catches panics (an `ww_*` call never unwinds into C++); errors are returned
//! as C strings the caller frees with `ww_string_free`.
mod bindings;
mod cwasm;
mod descriptor;
mod engine;
mod ffi_types;
mod host;
mod instance;
mod wake;
mod wasi;
mod wire;

// The ONNX Runtime engine's C ABI (`wo_*`), linked into the addon through this staticlib.
pub use warden_ort;

use engine::{EngineOptions, WwComponent, WwEngine};
use ffi_types::{NotifyFn, Reply, WwMessage};
use instance::{InstanceParams, WwInstance};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Runs `f`, turning a panic into an error.
fn guarded<T>(err: *mut *mut c_char, f: impl FnOnce() -> Result<T, String>) -> Option<T> {
    warden_ffi::guarded(err, "the wasmtime engine", f)
}

unsafe fn slice<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p, len)
    }
}

unsafe fn json_of(p: *const u8, len: usize) -> Result<serde_json::Value, String> {
    serde_json::from_slice(slice(p, len)).map_err(|e| format!("bad JSON from the host: {e}"))
}

/// Copies `n` host buffers (one copy: from JS memory into buffers the native thread owns).
unsafe fn buffers(ptrs: *const *const u8, lens: *const usize, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| slice(*ptrs.add(i), *lens.add(i)).to_vec()).collect()
}

#[no_mangle]
pub unsafe extern "C" fn ww_string_free(s: *mut c_char) {
    warden_ffi::free_string(s)
}

/// A new engine; messages of its instances go to `notify(ctx, msg)` from any thread.
#[no_mangle]
pub unsafe extern "C" fn ww_engine_new(json: *const u8, len: usize, notify: NotifyFn, ctx: *mut c_void, err: *mut *mut c_char) -> *mut WwEngine {
    guarded(err, || {
        let opts = EngineOptions::from_json(&json_of(json, len)?);
        let e = WwEngine::new(opts, ffi_types::Notifier::new(notify, ctx)).map_err(|e| format!("{e:#}"))?;
        Ok(Box::into_raw(Box::new(e)))
    })
    .unwrap_or(ptr::null_mut())
}

/// Frees an engine (after every instance reported `EXITED` and every component was freed).
#[no_mangle]
pub unsafe extern "C" fn ww_engine_free(e: *mut WwEngine) {
    if !e.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(e))));
    }
}

/// The engine's compile-cache key part (NUL-terminated hex; valid while the engine lives).
#[no_mangle]
pub unsafe extern "C" fn ww_engine_config_key(e: *const WwEngine, out: *mut u8, cap: usize) -> usize {
    let k = (*e).config_key.as_bytes();
    let n = k.len().min(cap);
    ptr::copy_nonoverlapping(k.as_ptr(), out, n);
    n
}

/// Compiles a component (blocking: run it off the JS thread).
#[no_mangle]
pub unsafe extern "C" fn ww_component_compile(e: *const WwEngine, bytes: *const u8, len: usize, err: *mut *mut c_char) -> *mut WwComponent {
    guarded(err, || Ok(Box::into_raw(Box::new((*e).compile(slice(bytes, len)).map_err(|e| format!("{e:#}"))?)))).unwrap_or(ptr::null_mut())
}

/// Loads the compile-cache entry at `path` (UTF-8, `path_len` bytes) if the keyed MAC of its
/// bytes (cwasm.rs) is `mac` — checked over the bytes, or vouched for by the entry's verified
/// stamp — and sets `*check` (1 MAC over the bytes, 2 verified stamp); no read into memory,
/// wasmtime maps the checked file. After a full check of a file last changed at least
/// `settle_ms` ago its stamp is recorded. On failure returns null, sets `*miss` (1 absent, 2
/// unreadable, 3 MAC mismatch, 4 refused by wasmtime) and `*err`. Blocking: run it off the JS
/// thread.
#[no_mangle]
pub unsafe extern "C" fn ww_component_load_cached(
    e: *const WwEngine,
    path: *const u8,
    path_len: usize,
    key: *const u8,
    hash: *const u8,
    hash_len: usize,
    mac: *const u8,
    max_bytes: u64,
    settle_ms: u64,
    check: *mut i32,
    miss: *mut i32,
    err: *mut *mut c_char,
) -> *mut WwComponent {
    let mut reason = cwasm::Miss::Unreadable;
    let out = guarded(err, || {
        let path = std::str::from_utf8(slice(path, path_len)).map_err(|_| "cache path is not UTF-8".to_string())?;
        let hash = std::str::from_utf8(slice(hash, hash_len)).map_err(|_| "component hash is not UTF-8".to_string())?;
        let key: &[u8; cwasm::KEY_LEN] = &*(key as *const [u8; cwasm::KEY_LEN]);
        let mac: &[u8; cwasm::KEY_LEN] = &*(mac as *const [u8; cwasm::KEY_LEN]);
        match cwasm::load_checked(&*e, std::path::Path::new(path), key, hash, mac, max_bytes, std::time::Duration::from_millis(settle_ms)) {
            Ok((c, how)) => {
                if !check.is_null() {
                    *check = how as i32;
                }
                Ok(Box::into_raw(Box::new(c)))
            }
            Err((m, msg)) => {
                reason = m;
                Err(msg)
            }
        }
    });
    match out {
        Some(c) => c,
        None => {
            if !miss.is_null() {
                *miss = reason as i32;
            }
            ptr::null_mut()
        }
    }
}

/// The compile-cache MAC (32 bytes into `out`) of a serialized component for `hash` under this
/// engine's configuration and the cache `key` (32 bytes).
#[no_mangle]
pub unsafe extern "C" fn ww_cwasm_mac(e: *const WwEngine, key: *const u8, hash: *const u8, hash_len: usize, payload: *const u8, len: usize, out: *mut u8) -> bool {
    catch_unwind(AssertUnwindSafe(|| {
        let Ok(hash) = std::str::from_utf8(slice(hash, hash_len)) else { return false };
        let key: &[u8; cwasm::KEY_LEN] = &*(key as *const [u8; cwasm::KEY_LEN]);
        let m = cwasm::mac(key, hash, &(*e).config_key, slice(payload, len));
        ptr::copy_nonoverlapping(m.as_ptr(), out, m.len());
        true
    }))
    .unwrap_or(false)
}

/// Serializes a compiled component (`.cwasm` payload) into a message-owned buffer.
#[no_mangle]
pub unsafe extern "C" fn ww_component_serialize(c: *const WwComponent, err: *mut *mut c_char) -> *mut WwMessage {
    guarded(err, || {
        let bytes = (*c).component.serialize().map_err(|e| format!("{e:#}"))?;
        Ok(Box::into_raw(Box::new(WwMessage { instance: 0, kind: 0, json: String::new(), bufs: vec![Some(bytes)] })))
    })
    .unwrap_or(ptr::null_mut())
}

#[no_mangle]
pub unsafe extern "C" fn ww_component_free(c: *mut WwComponent) {
    if !c.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(Box::from_raw(c))));
    }
}

/// Linear memories a component's core modules define; -1 for a malformed binary.
#[no_mangle]
pub unsafe extern "C" fn ww_count_memories(bytes: *const u8, len: usize) -> i64 {
    catch_unwind(|| engine::count_memories(slice(bytes, len)).map(i64::from).unwrap_or(-1)).unwrap_or(-1)
}

/// Starts an instance thread; it reports `READY`, `CREATE_ERROR` or `TRAP` for its start-up.
#[no_mangle]
pub unsafe extern "C" fn ww_instance_new(e: *const WwEngine, c: *const WwComponent, id: u64, json: *const u8, len: usize, err: *mut *mut c_char) -> *mut WwInstance {
    guarded(err, || {
        let params = InstanceParams::from_json(&json_of(json, len)?)?;
        let e = &*e;
        let i = WwInstance::start(e.engine.clone(), e.ticker.clone(), e.tick_ms, e.fuel, (*c).pre.clone(), e.notifier.clone(), id, params).map_err(|e| format!("cannot start a sandbox thread: {e}"))?;
        Ok(Box::into_raw(Box::new(i)))
    })
    .unwrap_or(ptr::null_mut())
}

/// Queues an execute: a requests descriptor (descriptor.rs; copied) and the input buffers it
/// indexes. The buffers are NOT copied: the caller
/// keeps them alive and unchanged until the execute's terminal message (`DONE`, `TRAP`,
/// `RESPAWN_FAILED`) or the thread's `EXITED`; wasmtime lowers them into the guest (the one copy
/// in). False if the thread ended.
#[no_mangle]
pub unsafe extern "C" fn ww_instance_execute(i: *const WwInstance, desc: *const u8, len: usize, ptrs: *const *const u8, lens: *const usize, n: usize, err: *mut *mut c_char) -> bool {
    guarded(err, || {
        let bufs = (0..n).map(|k| (*ptrs.add(k) as usize, *lens.add(k))).collect();
        Ok((*i).execute(slice(desc, len).to_vec(), instance::HostBuffers(bufs)))
    })
    .unwrap_or(false)
}

/// Answers the instance's pending `CALL`.
#[no_mangle]
pub unsafe extern "C" fn ww_instance_reply(i: *const WwInstance, json: *const u8, len: usize, ptrs: *const *const u8, lens: *const usize, n: usize, err: *mut *mut c_char) -> bool {
    guarded(err, || Ok((*i).reply(Reply { json: json_of(json, len)?, bufs: buffers(ptrs, lens, n) }))).unwrap_or(false)
}

/// Asks the instance thread to end and frees the handle; the thread reports `EXITED`.
#[no_mangle]
pub unsafe extern "C" fn ww_instance_free(i: *mut WwInstance) {
    if !i.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let b = Box::from_raw(i);
            b.stop();
        }));
    }
}

#[no_mangle]
pub unsafe extern "C" fn ww_message_instance(m: *const WwMessage) -> u64 {
    (*m).instance
}

#[no_mangle]
pub unsafe extern "C" fn ww_message_kind(m: *const WwMessage) -> u32 {
    (*m).kind
}

/// The message's JSON (not NUL-terminated), valid until `ww_message_free`.
#[no_mangle]
pub unsafe extern "C" fn ww_message_json(m: *const WwMessage, len: *mut usize) -> *const u8 {
    let m = &*m;
    *len = m.json.len();
    m.json.as_ptr()
}

#[no_mangle]
pub unsafe extern "C" fn ww_message_buffer_count(m: *const WwMessage) -> usize {
    (&(*m).bufs).len()
}

/// Takes buffer `i` out of the message: `*data`/`*len` point at its bytes until
/// `ww_buffer_free(returned)`. Null if already taken.
#[no_mangle]
pub unsafe extern "C" fn ww_message_take_buffer(m: *mut WwMessage, i: usize, data: *mut *mut u8, len: *mut usize) -> *mut c_void {
    let m = &mut *m;
    match m.bufs.get_mut(i).and_then(Option::take) {
        Some(v) => {
            let mut b = Box::new(v);
            *data = b.as_mut_ptr();
            *len = b.len();
            Box::into_raw(b) as *mut c_void
        }
        None => ptr::null_mut(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn ww_buffer_free(b: *mut c_void) {
    if !b.is_null() {
        drop(Box::from_raw(b as *mut Vec<u8>));
    }
}

#[no_mangle]
pub unsafe extern "C" fn ww_message_free(m: *mut WwMessage) {
    if !m.is_null() {
        drop(Box::from_raw(m));
    }
}
