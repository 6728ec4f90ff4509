//! The compile cache's integrity check on the Rust side (host/src/backends/wasm/wasmtime/cache.ts
//! keeps the folder): a cache entry is the raw artifact `Component::serialize` wrote, and its
//! file name carries a keyed BLAKE3 MAC of it. The key is a per-cache secret (32 random bytes,
//! mode 0600 beside the entries), so a file written by anyone without the key — a tampered,
//! truncated, renamed or foreign entry — fails the check and is compiled again.
//!
//! Loading an entry: open it once (no symlinks, regular files only, bounded size), map it, check
//! the MAC over the mapping, then hand wasmtime that same open file (`/proc/self/fd/N`) to map
//! with `Component::deserialize_file`: no read into memory, no copy, and no window in which a
//! replaced directory entry could be loaded instead of the bytes that were checked.
use crate::engine::{WwComponent, WwEngine};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use wasmtime::{Engine, Precompiled};

/// Bytes of the cache key and of a MAC.
pub const KEY_LEN: usize = 32;

/// Why a cache entry was not used (mirrored by cache.ts `CacheMiss`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Miss {
    Absent = 1,
    /// Not a regular file, too large, or an I/O error.
    Unreadable = 2,
    /// The MAC does not match (tampered, truncated, renamed, or written with another key).
    Mac = 3,
    /// wasmtime refused the checked bytes (not a precompiled component of this engine).
    Refused = 4,
}

/// Keyed BLAKE3 of a cache entry: binds the component's SHA-256, the engine's configuration key
/// and the payload (length included).
pub fn mac(key: &[u8; KEY_LEN], component_hash: &str, config_key: &str, payload: &[u8]) -> [u8; KEY_LEN] {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(b"warden-cwasm/2\0");
    h.update(component_hash.as_bytes());
    h.update(b"\0");
    h.update(config_key.as_bytes());
    h.update(b"\0");
    h.update(&(payload.len() as u64).to_le_bytes());
    h.update(payload);
    *h.finalize().as_bytes()
}

/// A read-only private mapping of a whole file, unmapped on drop.
struct Mapping {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mapping {
    fn new(file: &File, len: usize) -> std::io::Result<Mapping> {
        // SAFETY: a fresh read-only mapping of `len` bytes of an open regular file.
        let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_POPULATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping { ptr, len })
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: mapped readable for `len` bytes while `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// Loads the cache entry at `path` if its MAC is `expected`; else says why not.
/// `max_bytes` bounds the file size before anything is mapped.
pub fn load_checked(e: &WwEngine, path: &Path, key: &[u8; KEY_LEN], component_hash: &str, expected: &[u8; KEY_LEN], max_bytes: u64) -> Result<WwComponent, (Miss, String)> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC).open(path).map_err(|err| {
        if err.kind() == std::io::ErrorKind::NotFound {
            (Miss::Absent, "absent".to_string())
        } else {
            (Miss::Unreadable, format!("cannot open: {}", err.kind()))
        }
    })?;
    let meta = file.metadata().map_err(|err| (Miss::Unreadable, format!("cannot stat: {}", err.kind())))?;
    let ft = meta.file_type();
    if !ft.is_file() || ft.is_fifo() || ft.is_socket() {
        return Err((Miss::Unreadable, "not a regular file".into()));
    }
    let len = meta.len();
    if len == 0 || len > max_bytes {
        return Err((Miss::Unreadable, format!("size {len} outside 1..={max_bytes} bytes")));
    }
    {
        let map = Mapping::new(&file, len as usize).map_err(|err| (Miss::Unreadable, format!("cannot map: {}", err.kind())))?;
        let got = blake3::Hash::from(mac(key, component_hash, &e.config_key, map.bytes()));
        // constant-time comparison (blake3::Hash's PartialEq)
        if got != blake3::Hash::from(*expected) {
            return Err((Miss::Mac, "MAC mismatch".into()));
        }
        if Engine::detect_precompiled(map.bytes()) != Some(Precompiled::Component) {
            return Err((Miss::Refused, "not a precompiled component".into()));
        }
    }
    // SAFETY: the bytes behind this open file were just checked against a MAC only this cache's
    // key can make, over output of `Component::serialize` for this engine configuration; wasmtime
    // maps the same open file (not the path, which may have been replaced since).
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    let component = unsafe { wasmtime::component::Component::deserialize_file(&e.engine, &proc_path) }.map_err(|err| (Miss::Refused, format!("{err:#}")))?;
    drop(file);
    e.link(component).map_err(|err| (Miss::Refused, format!("{err:#}")))
}
