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
//!
//! The verified stamp (`<entry>.verified`, beside it): hashing a large entry is most of a first
//! load (BLAKE3 over 35 MiB ≈ 8 ms), so after a full check the open file's stamps — device,
//! inode, size, mtime and ctime in ns, the digest memo's argument (host/src/backends/wasm/
//! digests.ts) — are recorded under a keyed MAC that binds them to the entry's MAC, the component
//! hash and the engine configuration. A later load whose open file has exactly those stamps
//! trusts the earlier check instead of hashing again. Sound because the kernel moves ctime on
//! every write, truncation, `utimes`, `chmod` or rename of the file and no one below root can set
//! it back; recorded only when the stamps were equal before the hash and after it and the last
//! change is at least `settle_ms` old (a write in the same coarse timestamp tick as the check
//! would otherwise keep them equal). What it no longer catches: a change of the bytes that leaves
//! every stamp as it was — bit rot on the medium, writes to the block device or by root with the
//! clock set back; those are caught only once the stamp is invalidated (any metadata change) or
//! its file deleted.
use crate::engine::{WwComponent, WwEngine};
use std::fs::{File, Metadata, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
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

/// How a loaded entry was checked (mirrored by cache.ts `CacheCheck`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Check {
    /// The MAC over all its bytes.
    Mac = 1,
    /// Its verified stamp: the open file is unchanged since a full check.
    Stamp = 2,
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
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
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

const STAMP_TAG: &str = "warden-cwasm-verified/1";
/// Largest stamp file read (one short line).
const STAMP_MAX_BYTES: u64 = 512;

/// The stamps of an open file: `dev ino size mtime_ns ctime_ns` (as digests.ts `stamps` writes them).
fn stamps(m: &Metadata) -> String {
    let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
    format!("{} {} {} {} {}", m.dev(), m.ino(), m.size(), ns(m.mtime(), m.mtime_nsec()), ns(m.ctime(), m.ctime_nsec()))
}

/// The stamp file of the entry at `path`: `<entry>.verified`.
fn stamp_path(path: &Path) -> PathBuf {
    path.with_extension("verified")
}

/// Keyed BLAKE3 of a verified stamp: binds the stamps to the entry's MAC (and so to its bytes),
/// the component hash and the engine configuration.
fn stamp_mac(
    key: &[u8; KEY_LEN],
    component_hash: &str,
    config_key: &str,
    entry_mac: &[u8; KEY_LEN],
    stamped: &str,
) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(STAMP_TAG.as_bytes());
    h.update(b"\0");
    h.update(component_hash.as_bytes());
    h.update(b"\0");
    h.update(config_key.as_bytes());
    h.update(b"\0");
    h.update(entry_mac);
    h.update(stamped.as_bytes());
    h.finalize()
}

/// The stamps the entry's stamp file vouches for, if it is a small regular file (not a link)
/// whose MAC is right; None for anything else (absent, foreign, forged, malformed).
fn vouched_stamps(
    path: &Path,
    key: &[u8; KEY_LEN],
    component_hash: &str,
    config_key: &str,
    entry_mac: &[u8; KEY_LEN],
) -> Option<String> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(stamp_path(path))
        .ok()?;
    let m = f.metadata().ok()?;
    if !m.file_type().is_file() || m.len() > STAMP_MAX_BYTES {
        return None;
    }
    let mut text = String::new();
    (&mut f).take(STAMP_MAX_BYTES).read_to_string(&mut text).ok()?;
    let line = text.strip_suffix('\n')?.strip_prefix(STAMP_TAG)?.strip_prefix(' ')?;
    let (stamped, mac_hex) = line.rsplit_once(' ')?;
    let got = blake3::Hash::from_hex(mac_hex).ok()?;
    // constant-time comparison (blake3::Hash's PartialEq)
    (got == stamp_mac(key, component_hash, config_key, entry_mac, stamped)).then(|| stamped.to_string())
}

/// Records `stamped` as verified for the entry at `path` (atomically: a 0600 temporary file beside
/// it, renamed over the stamp file). Failures are ignored: the next load checks the whole file.
fn record_stamps(
    path: &Path,
    key: &[u8; KEY_LEN],
    component_hash: &str,
    config_key: &str,
    entry_mac: &[u8; KEY_LEN],
    stamped: &str,
) {
    let Some(dir) = path.parent() else { return };
    let mut rnd = [0u8; 8];
    // SAFETY: writes at most 8 bytes into `rnd`.
    if unsafe { libc::getrandom(rnd.as_mut_ptr() as *mut libc::c_void, rnd.len(), 0) } != rnd.len() as isize {
        return;
    }
    let tmp = dir.join(format!(
        ".tmp-{}-{}.verified",
        std::process::id(),
        rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ));
    let line =
        format!("{STAMP_TAG} {stamped} {}\n", stamp_mac(key, component_hash, config_key, entry_mac, stamped).to_hex());
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .and_then(|_| std::fs::rename(&tmp, stamp_path(path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Whether a file last changed at `m`'s ctime is at least `settle` in the past.
fn settled(m: &Metadata, settle: Duration) -> bool {
    let ctime = UNIX_EPOCH + Duration::new(m.ctime().max(0) as u64, m.ctime_nsec().clamp(0, 999_999_999) as u32);
    SystemTime::now().duration_since(ctime).is_ok_and(|age| age >= settle)
}

/// Loads the cache entry at `path` if its MAC is `expected` — checked over all its bytes, or
/// vouched for by its verified stamp (module docs) — and says how it was checked; else says why
/// not. `max_bytes` bounds the file size before anything is mapped; after a full check the
/// stamps are recorded if the file's last change is at least `settle` old.
pub fn load_checked(
    e: &WwEngine,
    path: &Path,
    key: &[u8; KEY_LEN],
    component_hash: &str,
    expected: &[u8; KEY_LEN],
    max_bytes: u64,
    settle: Duration,
) -> Result<(WwComponent, Check), (Miss, String)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|err| {
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
    let before = stamps(&meta);
    let check =
        if vouched_stamps(path, key, component_hash, &e.config_key, expected).as_deref() == Some(before.as_str()) {
            Check::Stamp
        } else {
            let map = Mapping::new(&file, len as usize)
                .map_err(|err| (Miss::Unreadable, format!("cannot map: {}", err.kind())))?;
            let got = blake3::Hash::from(mac(key, component_hash, &e.config_key, map.bytes()));
            // constant-time comparison (blake3::Hash's PartialEq)
            if got != blake3::Hash::from(*expected) {
                return Err((Miss::Mac, "MAC mismatch".into()));
            }
            if Engine::detect_precompiled(map.bytes()) != Some(Precompiled::Component) {
                return Err((Miss::Refused, "not a precompiled component".into()));
            }
            Check::Mac
        };
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    // SAFETY: the bytes behind this open file were just checked against a MAC only this cache's
    // key can make (or are unchanged since they were: its verified stamp), over output of
    // `Component::serialize` for this engine configuration; wasmtime maps the same open file (not
    // the path, which may have been replaced since).
    let component = unsafe { wasmtime::component::Component::deserialize_file(&e.engine, &proc_path) }
        .map_err(|err| (Miss::Refused, format!("{err:#}")))?;
    let linked = e.link(component).map_err(|err| (Miss::Refused, format!("{err:#}")))?;
    if check == Check::Mac {
        // the stamps of the file that was hashed, unchanged from the open to now, and settled
        if let Ok(after) = file.metadata() {
            if stamps(&after) == before && settled(&after, settle) {
                record_stamps(path, key, component_hash, &e.config_key, expected, &before);
            }
        }
    }
    drop(file);
    Ok((linked, check))
}
