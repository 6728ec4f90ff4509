//! Warden's own deny-by-default WASI 0.2 for the wasmtime engine: the same behaviour as the V8
//! engine's host/src/backends/wasm/host/wasi/ (clocks and randomness work; timers block the
//! sandbox's thread, bounded by the execute deadline; stdout / stderr go to the model's log under
//! the log budget; stdin is closed; no environment, arguments, cwd or terminal; `exit` ends the
//! sandbox like a trap). Filesystem, sockets and HTTP are not linked at all.
use crate::bindings::wasi;
use crate::bindings::wasi::io::streams::StreamError;
use crate::ffi_types::kind;
use crate::host::{DeadlineExceeded, Guest, GuestExit};
use serde_json::json;
use std::io::Read;
use std::time::{Duration, Instant};
use wasmtime::component::Resource;

/// Most resources (pollables, streams) one sandbox may hold at once.
const MAX_RESOURCES: usize = 4096;
/// Largest `get-random-bytes` answer (bytes), as the V8 engine.
const MAX_RANDOM_BYTES: u64 = 1 << 20;
/// Largest single write accepted (`check-write`), bytes.
const WRITE_CHUNK: u64 = 64 * 1024;

/// `wasi:io/poll.pollable`: ready at a monotonic instant (ns), or always.
pub struct Pollable {
    deadline_ns: Option<u64>,
}
/// `wasi:io/error.error` (never created: no stream here fails with an error).
pub struct IoError;
/// `wasi:io/streams.input-stream`: stdin, always closed.
pub struct InputStream;
/// `wasi:io/streams.output-stream`: stdout (1) or stderr (2).
pub struct OutputStream {
    stream: u8,
}
/// `wasi:cli/terminal-input.terminal-input` (never created: there is no terminal).
pub struct TerminalInput;
/// `wasi:cli/terminal-output.terminal-output` (never created).
pub struct TerminalOutput;

/// CLOCK_MONOTONIC in ns: the clock of `process.hrtime` and of the V8 engine's `now`.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn random_fill(buf: &mut [u8]) -> wasmtime::Result<()> {
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| wasmtime::Error::msg(format!("no randomness: {e}")))
}

fn random_bytes(len: u64) -> wasmtime::Result<Vec<u8>> {
    let mut v = vec![0u8; len.min(MAX_RANDOM_BYTES) as usize];
    random_fill(&mut v)?;
    Ok(v)
}

fn random_u64() -> wasmtime::Result<u64> {
    let mut b = [0u8; 8];
    random_fill(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

impl Guest {
    fn push<T: Send + 'static>(&mut self, v: T) -> wasmtime::Result<Resource<T>> {
        if self.resources >= MAX_RESOURCES {
            return Err(wasmtime::Error::msg(format!("the backend holds more than {MAX_RESOURCES} WASI resources")));
        }
        let r = self.table.push(v)?;
        self.resources += 1;
        Ok(r)
    }

    fn del<T: 'static>(&mut self, r: Resource<T>) -> wasmtime::Result<()> {
        self.table.delete(r)?;
        self.resources -= 1;
        Ok(())
    }

    /// Blocks until `deadline_ns` (monotonic), or fails when the execute deadline comes first.
    fn sleep_until(&mut self, deadline_ns: u64) -> wasmtime::Result<()> {
        loop {
            let now = monotonic_ns();
            if now >= deadline_ns {
                return Ok(());
            }
            let mut wait = Duration::from_nanos(deadline_ns - now);
            if let Some(left) = self.io.remaining()? {
                if left < wait {
                    std::thread::sleep(left);
                    if self.io.deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(wasmtime::Error::new(DeadlineExceeded));
                    }
                    continue;
                }
                wait = wait.min(left);
            }
            std::thread::sleep(wait);
        }
    }

    fn write_output(&mut self, stream: u8, bytes: Vec<u8>) {
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.io.log.charge(bytes.len() as u64, newlines) {
            self.io.post(kind::OUTPUT, json!({ "stream": if stream == 2 { "stderr" } else { "stdout" } }), vec![bytes]);
        }
    }
}

impl wasi::io::poll::HostPollable for Guest {
    fn ready(&mut self, p: Resource<Pollable>) -> wasmtime::Result<bool> {
        let p = self.table.get(&p)?;
        Ok(p.deadline_ns.is_none_or(|d| monotonic_ns() >= d))
    }
    fn block(&mut self, p: Resource<Pollable>) -> wasmtime::Result<()> {
        if let Some(d) = self.table.get(&p)?.deadline_ns {
            self.sleep_until(d)?;
        }
        Ok(())
    }
    fn drop(&mut self, p: Resource<Pollable>) -> wasmtime::Result<()> {
        self.del(p)
    }
}

impl wasi::io::poll::Host for Guest {
    fn poll(&mut self, list: Vec<Resource<Pollable>>) -> wasmtime::Result<Vec<u32>> {
        if list.is_empty() {
            return Err(wasmtime::Error::new(GuestExit("poll on an empty list".into())));
        }
        let deadlines: Vec<Option<u64>> =
            list.iter().map(|p| self.table.get(p).map(|p| p.deadline_ns)).collect::<Result<_, _>>()?;
        loop {
            let now = monotonic_ns();
            let ready: Vec<u32> = deadlines
                .iter()
                .enumerate()
                .filter(|(_, d)| d.is_none_or(|d| now >= d))
                .map(|(i, _)| i as u32)
                .collect();
            if !ready.is_empty() {
                return Ok(ready);
            }
            let soonest = deadlines.iter().filter_map(|d| *d).min().unwrap_or(now);
            self.sleep_until(soonest)?;
        }
    }
}

impl wasi::io::error::HostError for Guest {
    fn to_debug_string(&mut self, _e: Resource<IoError>) -> wasmtime::Result<String> {
        Ok("error".into())
    }
    fn drop(&mut self, e: Resource<IoError>) -> wasmtime::Result<()> {
        self.del(e)
    }
}
impl wasi::io::error::Host for Guest {}

type StreamResult<T> = wasmtime::Result<Result<T, StreamError>>;

impl wasi::io::streams::HostInputStream for Guest {
    fn read(&mut self, _s: Resource<InputStream>, _len: u64) -> StreamResult<Vec<u8>> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_read(&mut self, _s: Resource<InputStream>, _len: u64) -> StreamResult<Vec<u8>> {
        Ok(Err(StreamError::Closed))
    }
    fn skip(&mut self, _s: Resource<InputStream>, _len: u64) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_skip(&mut self, _s: Resource<InputStream>, _len: u64) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn subscribe(&mut self, _s: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        self.push(Pollable { deadline_ns: None })
    }
    fn drop(&mut self, s: Resource<InputStream>) -> wasmtime::Result<()> {
        self.del(s)
    }
}

impl wasi::io::streams::HostOutputStream for Guest {
    fn check_write(&mut self, _s: Resource<OutputStream>) -> StreamResult<u64> {
        Ok(Ok(WRITE_CHUNK))
    }
    fn write(&mut self, s: Resource<OutputStream>, contents: Vec<u8>) -> StreamResult<()> {
        let stream = self.table.get(&s)?.stream;
        self.write_output(stream, contents);
        Ok(Ok(()))
    }
    fn blocking_write_and_flush(&mut self, s: Resource<OutputStream>, contents: Vec<u8>) -> StreamResult<()> {
        self.write(s, contents)
    }
    fn flush(&mut self, _s: Resource<OutputStream>) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn blocking_flush(&mut self, _s: Resource<OutputStream>) -> StreamResult<()> {
        Ok(Ok(()))
    }
    fn subscribe(&mut self, _s: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        self.push(Pollable { deadline_ns: None })
    }
    fn write_zeroes(&mut self, s: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        let stream = self.table.get(&s)?.stream;
        self.write_output(stream, vec![0u8; len.min(WRITE_CHUNK) as usize]);
        Ok(Ok(()))
    }
    fn blocking_write_zeroes_and_flush(&mut self, s: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        self.write_zeroes(s, len)
    }
    fn splice(&mut self, _s: Resource<OutputStream>, _src: Resource<InputStream>, _len: u64) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn blocking_splice(
        &mut self,
        _s: Resource<OutputStream>,
        _src: Resource<InputStream>,
        _len: u64,
    ) -> StreamResult<u64> {
        Ok(Err(StreamError::Closed))
    }
    fn drop(&mut self, s: Resource<OutputStream>) -> wasmtime::Result<()> {
        self.del(s)
    }
}
impl wasi::io::streams::Host for Guest {}

impl wasi::clocks::monotonic_clock::Host for Guest {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(monotonic_ns())
    }
    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(1)
    }
    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<Pollable>> {
        self.push(Pollable { deadline_ns: Some(when) })
    }
    fn subscribe_duration(&mut self, ns: u64) -> wasmtime::Result<Resource<Pollable>> {
        self.push(Pollable { deadline_ns: Some(monotonic_ns().saturating_add(ns)) })
    }
}

impl wasi::clocks::wall_clock::Host for Guest {
    fn now(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Ok(wasi::clocks::wall_clock::Datetime { seconds: d.as_secs(), nanoseconds: d.subsec_millis() * 1_000_000 })
    }
    fn resolution(&mut self) -> wasmtime::Result<wasi::clocks::wall_clock::Datetime> {
        Ok(wasi::clocks::wall_clock::Datetime { seconds: 0, nanoseconds: 1_000_000 })
    }
}

impl wasi::random::random::Host for Guest {
    fn get_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        random_bytes(len)
    }
    fn get_random_u64(&mut self) -> wasmtime::Result<u64> {
        random_u64()
    }
}
impl wasi::random::insecure::Host for Guest {
    fn get_insecure_random_bytes(&mut self, len: u64) -> wasmtime::Result<Vec<u8>> {
        random_bytes(len)
    }
    fn get_insecure_random_u64(&mut self) -> wasmtime::Result<u64> {
        random_u64()
    }
}
impl wasi::random::insecure_seed::Host for Guest {
    fn insecure_seed(&mut self) -> wasmtime::Result<(u64, u64)> {
        Ok((random_u64()?, random_u64()?))
    }
}

impl wasi::cli::environment::Host for Guest {
    fn get_environment(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(vec![])
    }
    fn get_arguments(&mut self) -> wasmtime::Result<Vec<String>> {
        Ok(vec![])
    }
    fn initial_cwd(&mut self) -> wasmtime::Result<Option<String>> {
        Ok(None)
    }
}

impl wasi::cli::exit::Host for Guest {
    fn exit(&mut self, status: Result<(), ()>) -> wasmtime::Result<()> {
        let s = if status.is_ok() { "ok" } else { "err" };
        Err(wasmtime::Error::new(GuestExit(format!(
            "the backend called wasi:cli/exit ({s}); sandboxed backends may not exit"
        ))))
    }
    fn exit_with_code(&mut self, code: u8) -> wasmtime::Result<()> {
        Err(wasmtime::Error::new(GuestExit(format!(
            "the backend called wasi:cli/exit ({code}); sandboxed backends may not exit"
        ))))
    }
}

impl wasi::cli::stdin::Host for Guest {
    fn get_stdin(&mut self) -> wasmtime::Result<Resource<InputStream>> {
        self.push(InputStream)
    }
}
impl wasi::cli::stdout::Host for Guest {
    fn get_stdout(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.push(OutputStream { stream: 1 })
    }
}
impl wasi::cli::stderr::Host for Guest {
    fn get_stderr(&mut self) -> wasmtime::Result<Resource<OutputStream>> {
        self.push(OutputStream { stream: 2 })
    }
}

impl wasi::cli::terminal_input::HostTerminalInput for Guest {
    fn drop(&mut self, r: Resource<TerminalInput>) -> wasmtime::Result<()> {
        self.del(r)
    }
}
impl wasi::cli::terminal_input::Host for Guest {}
impl wasi::cli::terminal_output::HostTerminalOutput for Guest {
    fn drop(&mut self, r: Resource<TerminalOutput>) -> wasmtime::Result<()> {
        self.del(r)
    }
}
impl wasi::cli::terminal_output::Host for Guest {}
impl wasi::cli::terminal_stdin::Host for Guest {
    fn get_terminal_stdin(&mut self) -> wasmtime::Result<Option<Resource<TerminalInput>>> {
        Ok(None)
    }
}
impl wasi::cli::terminal_stdout::Host for Guest {
    fn get_terminal_stdout(&mut self) -> wasmtime::Result<Option<Resource<TerminalOutput>>> {
        Ok(None)
    }
}
impl wasi::cli::terminal_stderr::Host for Guest {
    fn get_terminal_stderr(&mut self) -> wasmtime::Result<Option<Resource<TerminalOutput>>> {
        Ok(None)
    }
}
