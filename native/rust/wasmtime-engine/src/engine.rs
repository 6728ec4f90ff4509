//! One wasmtime `Engine` per Warden sandbox engine: component model, Cranelift, epoch
//! interruption driven by a ticker thread, and the pooling allocator (a fresh instance reuses a
//! pre-reserved slot: microseconds, not an mmap per memory). Components are compiled once and
//! linked once (`InstancePre`); instances start from that.
use crate::bindings::SandboxPre;
use crate::ffi_types::Notifier;
use crate::host::Guest;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, OptLevel, PoolingAllocationConfig};

/// Engine settings (from the host's JSON; every field optional).
pub struct EngineOptions {
    /// Epoch tick, ms (the deadline's resolution).
    pub tick_ms: u64,
    /// Pooling allocator on (default) or on-demand allocation.
    pub pooling: bool,
    /// Fuel metering: every execute reports the fuel (≈ wasm instructions) it consumed.
    pub fuel: bool,
    /// Largest linear memory of any instance, bytes (the pool's slot size).
    pub max_memory_bytes: u64,
    pub total_component_instances: u32,
    pub total_core_instances: u32,
    pub total_memories: u32,
    pub total_tables: u32,
    pub table_elements: u64,
    pub max_core_instances_per_component: u32,
    pub max_memories_per_component: u32,
    pub max_tables_per_component: u32,
}

fn field(v: &Value, k: &str, d: u64) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(d)
}

impl EngineOptions {
    pub fn from_json(v: &Value) -> EngineOptions {
        EngineOptions {
            tick_ms: field(v, "tickMs", 1).clamp(1, 1000),
            pooling: v.get("pooling").and_then(Value::as_bool).unwrap_or(true),
            fuel: v.get("fuel").and_then(Value::as_bool).unwrap_or(false),
            max_memory_bytes: field(v, "maxMemoryBytes", 256 << 20),
            total_component_instances: field(v, "totalComponentInstances", 1000) as u32,
            total_core_instances: field(v, "totalCoreInstances", 20_000) as u32,
            total_memories: field(v, "totalMemories", 2000) as u32,
            total_tables: field(v, "totalTables", 4000) as u32,
            table_elements: field(v, "tableElements", 100_000),
            max_core_instances_per_component: field(v, "maxCoreInstancesPerComponent", 64) as u32,
            max_memories_per_component: field(v, "maxMemoriesPerComponent", 16) as u32,
            max_tables_per_component: field(v, "maxTablesPerComponent", 32) as u32,
        }
    }
}

/// Feeds `Hash` into SHA-256 (a stable cache key, unlike `DefaultHasher`).
struct ShaHasher(Sha256);
impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

pub struct WwEngine {
    pub engine: Engine,
    pub linker: Linker<Guest>,
    pub notifier: Arc<Notifier>,
    pub tick_ms: u64,
    /// Fuel metering on.
    pub fuel: bool,
    /// SHA-256 (hex) of everything that makes a precompiled component valid for this engine.
    pub config_key: String,
    /// The epoch ticker: ticks only while some guest call is running (`Ticker::hold`).
    pub ticker: Arc<Ticker>,
    ticker_thread: Option<JoinHandle<()>>,
}

struct TickerState {
    /// Guest calls running now (instance start-up and executes, host calls included).
    active: AtomicUsize,
    /// Set by every call's start; the ticker clears it on each tick (the idle grace, below).
    recent: AtomicBool,
    /// The ticker is parked (or about to be): the next call's start must unpark it.
    parked: AtomicBool,
    stop: AtomicBool,
}

/// How long the ticker goes on ticking after the last guest call ended before it parks.
///
/// Parking after every call made each call start wake the ticker thread (a futex wake of a thread
/// whose vCPU may have halted, wake.rs). With a grace period a loaded server pays one timer wake
/// per tick (1 ms) whatever its request rate, and an idle one stops waking any CPU a quarter of a
/// second after its last request. (Measured: no visible change at c=1 on its own; the C guest's
/// c=1 gap was the JS-thread wake-up's lock hand-off, addon/js_wake.h.)
const IDLE_GRACE: Duration = Duration::from_millis(250);

/// The engine's epoch ticker (epoch interruption, the execute deadline). It advances the epoch
/// every `tick_ms` while guest calls run or have run within `IDLE_GRACE`, and parks otherwise,
/// so an idle server with wasmtime models wakes no CPU a thousand times a second. A call's epoch
/// deadline is one tick longer than its limit (instance.rs `ticks`): the first tick after a call
/// begins may come at once when the ticker is already running, or `tick_ms` later when the call
/// woke it.
pub struct Ticker {
    state: Arc<TickerState>,
    thread: std::thread::Thread,
}

impl Ticker {
    /// Keeps the epoch ticking until the guard is dropped (and for `IDLE_GRACE` after). Wakes the
    /// ticker thread only when it has parked: `unpark` on a running thread costs no syscall, but
    /// the check keeps even its atomic swap off the path.
    pub fn hold(&self) -> TickerGuard<'_> {
        self.state.active.fetch_add(1, Ordering::SeqCst);
        if !self.state.recent.load(Ordering::Relaxed) {
            self.state.recent.store(true, Ordering::Relaxed);
        }
        if self.state.parked.load(Ordering::SeqCst) {
            self.thread.unpark();
        }
        TickerGuard(self)
    }
}

/// A running guest call (see `Ticker::hold`).
pub struct TickerGuard<'a>(&'a Ticker);

impl Drop for TickerGuard<'_> {
    fn drop(&mut self) {
        self.0.state.active.fetch_sub(1, Ordering::AcqRel);
        self.0.state.recent.store(true, Ordering::Relaxed);
    }
}

impl WwEngine {
    pub fn new(opts: EngineOptions, notifier: Arc<Notifier>) -> wasmtime::Result<WwEngine> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.cranelift_opt_level(OptLevel::Speed);
        config.parallel_compilation(true);
        config.max_wasm_stack(1 << 20);
        config.consume_fuel(opts.fuel);
        if opts.pooling {
            let mut pool = PoolingAllocationConfig::default();
            pool.total_component_instances(opts.total_component_instances)
                .total_core_instances(opts.total_core_instances)
                .total_memories(opts.total_memories)
                .total_tables(opts.total_tables)
                .table_elements(opts.table_elements as usize)
                .max_core_instances_per_component(opts.max_core_instances_per_component)
                .max_memories_per_component(opts.max_memories_per_component)
                .max_tables_per_component(opts.max_tables_per_component)
                .max_memory_size(opts.max_memory_bytes as usize)
                .max_core_instance_size(8 << 20)
                .max_component_instance_size(8 << 20);
            config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        }
        let engine = Engine::new(&config)?;
        let mut linker = Linker::new(&engine);
        crate::bindings::Sandbox::add_to_linker::<Guest, HasSelf<Guest>>(&mut linker, |g| g)?;
        let mut h = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut h);
        "warden-wasmtime/1".hash(&mut h);
        let config_key = h.0.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let state = Arc::new(TickerState {
            active: AtomicUsize::new(0),
            recent: AtomicBool::new(false),
            parked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let thread = {
            let engine = engine.clone();
            let state = state.clone();
            let tick = Duration::from_millis(opts.tick_ms);
            let grace_ticks = (IDLE_GRACE.as_millis() as u64).div_ceil(opts.tick_ms).max(1);
            std::thread::Builder::new().name("warden-wasmtime-epoch".into()).spawn(move || {
                crate::wake::restore_home_mask();
                // Starts parked: no guest call has run yet.
                let mut idle_ticks = grace_ticks;
                while !state.stop.load(Ordering::Acquire) {
                    if idle_ticks >= grace_ticks {
                        // Announce the park before the last look at `active`: a call that starts
                        // after this store sees it and unparks (a token, so an unpark that comes
                        // before `park` makes it return at once); one that started before is seen.
                        state.parked.store(true, Ordering::SeqCst);
                        if state.active.load(Ordering::SeqCst) == 0 && !state.stop.load(Ordering::Acquire) {
                            std::thread::park();
                        }
                        state.parked.store(false, Ordering::SeqCst);
                        idle_ticks = 0;
                        state.recent.store(false, Ordering::Relaxed);
                    }
                    std::thread::sleep(tick);
                    engine.increment_epoch();
                    let busy = state.active.load(Ordering::Acquire) != 0;
                    let recent = state.recent.swap(false, Ordering::Relaxed);
                    idle_ticks = if busy || recent { 0 } else { idle_ticks + 1 };
                }
            })?
        };
        let ticker = Arc::new(Ticker { state, thread: thread.thread().clone() });
        Ok(WwEngine {
            engine,
            linker,
            notifier,
            tick_ms: opts.tick_ms,
            fuel: opts.fuel,
            config_key,
            ticker,
            ticker_thread: Some(thread),
        })
    }

    /// Compiles a component (Cranelift; seconds for a large one) and links it.
    pub fn compile(&self, bytes: &[u8]) -> wasmtime::Result<WwComponent> {
        let component = Component::new(&self.engine, bytes)?;
        self.link(component)
    }

    pub fn link(&self, component: Component) -> wasmtime::Result<WwComponent> {
        let pre = SandboxPre::new(self.linker.instantiate_pre(&component)?)?;
        Ok(WwComponent { component, pre })
    }
}

impl Drop for WwEngine {
    fn drop(&mut self) {
        self.ticker.state.stop.store(true, Ordering::Release);
        self.ticker.thread.unpark();
        if let Some(t) = self.ticker_thread.take() {
            let _ = t.join();
        }
    }
}

/// A compiled and linked component, shared by every instance of every model with its hash.
pub struct WwComponent {
    pub component: Component,
    pub pre: SandboxPre<Guest>,
}

/// Linear memories the component's core modules define (each instantiated once).
pub fn count_memories(bytes: &[u8]) -> Result<u32, String> {
    let mut n = 0u32;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::MemorySection(s) = payload.map_err(|e| e.to_string())? {
            n += s.count();
        }
    }
    Ok(n)
}
