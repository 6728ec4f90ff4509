//! One sandboxed model instance on its own native thread: the thread owns the wasmtime `Store`,
//! runs `model.create` / `instance.create` and then every `execute` the host queues, each under
//! an epoch deadline and `StoreLimits`. A trap (or a deadline) poisons the store: the thread drops
//! it and instantiates again from the component's `InstancePre` (a pooled slot, so microseconds
//! plus the guest's own start-up), reporting the new sandbox ready without any JS round trip.
use crate::bindings::exports::warden::backend::backend::{InstanceContext, InstanceKind, ModelContext};
use crate::bindings::warden::backend::types::{CorrelationId, Request, RequestFlags, TensorParam};
use crate::bindings::{Sandbox, SandboxPre};
use crate::descriptor;
use crate::direct::{DirectExecute, DirectHandle, DirectOutcome};
use crate::engine::Ticker;
use crate::ffi_types::{kind, Notifier, Reply};
use crate::host::{DeadlineExceeded, Finalized, Guest, GuestExit, Io, LogFilter};
use crate::wake::WakeSlot;
use crate::wasi::monotonic_ns;
use crate::wire;
use serde_json::{json, Value};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::{ResourceAny, ResourceTable};
use wasmtime::{Engine, Store, StoreLimitsBuilder, Trap};

/// What an instance is started with (the host's JSON).
pub struct InstanceParams {
    pub name: String,
    pub kind: InstanceKind,
    pub device_id: i32,
    pub model_name: String,
    pub model_version: u64,
    pub config_json: String,
    /// Per linear memory, bytes.
    pub memory_bytes: u64,
    /// Linear memories the instance may create.
    pub memories: u32,
    pub execute_ms: u64,
    /// Start-up allowance on top of `execute_ms`.
    pub boot_ms: u64,
    pub log_bytes: u64,
    pub log_messages: u64,
}

impl InstanceParams {
    pub fn from_json(v: &Value) -> Result<InstanceParams, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string).ok_or_else(|| format!("missing '{k}'"));
        let n = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| format!("missing '{k}'"));
        Ok(InstanceParams {
            name: s("name")?,
            kind: match v.get("kind").and_then(Value::as_str) {
                Some("gpu") => InstanceKind::Gpu,
                Some("model") => InstanceKind::Model,
                _ => InstanceKind::Cpu,
            },
            device_id: v.get("deviceId").and_then(Value::as_i64).unwrap_or(0) as i32,
            model_name: s("modelName")?,
            model_version: n("modelVersion")?,
            config_json: s("configJson")?,
            memory_bytes: n("memoryBytes")?,
            memories: n("memories")? as u32,
            execute_ms: n("executeMs")?,
            boot_ms: n("bootMs")?,
            log_bytes: n("logBytes")?,
            log_messages: n("logMessages")?,
        })
    }
}

/// Input buffers of an execute: (address, length) in the host's memory. The host keeps them
/// alive and unchanged until this execute's terminal message (`DONE`, `TRAP`, `RESPAWN_FAILED`)
/// or the thread's `EXITED`; they are read once, when wasmtime lowers the requests into the guest.
pub struct HostBuffers(pub Vec<(usize, usize)>);

pub(crate) enum Cmd {
    /// A requests descriptor (descriptor.rs) and the input buffers it indexes.
    Execute(Vec<u8>, HostBuffers),
    /// An execute of the native data path (direct.rs).
    Direct(DirectExecute),
    Stop,
}

/// The host's handle on an instance thread.
pub struct WwInstance {
    cmds: Sender<Cmd>,
    replies: Sender<Reply>,
    wake: Arc<WakeSlot>,
    /// Unparked after every command: the thread waits with `park`, never in `Receiver::recv`,
    /// whose spin-and-`yield_now` before blocking kept it runnable on the CPU its poster had just
    /// placed it on (wake.rs), preempting the JS thread there about once per request.
    thread: std::thread::Thread,
}

impl WwInstance {
    pub fn start(
        engine: Engine,
        ticker: Arc<Ticker>,
        tick_ms: u64,
        fuel: bool,
        pre: SandboxPre<Guest>,
        notifier: Arc<Notifier>,
        id: u64,
        params: InstanceParams,
    ) -> std::io::Result<WwInstance> {
        let (cmds, cmd_rx) = channel();
        let (replies, reply_rx) = channel();
        let wake = Arc::new(WakeSlot::default());
        let thread_wake = wake.clone();
        let handle = std::thread::Builder::new().name(format!("warden-wasm-{id}")).stack_size(8 << 20).spawn(move || {
            crate::wake::restore_home_mask();
            let notifier2 = notifier.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let io = Io { id, notifier: notifier.clone(), replies: reply_rx, deadline: None, log: LogFilter::new(params.log_bytes, params.log_messages), direct: None, posted: false, call_seq: 0 };
                Worker { engine, ticker, tick_ms, fuel, pre, params, live: None, io: Some(io) }.run(cmd_rx, &thread_wake)
            }));
            if r.is_err() {
                notifier2.post(id, kind::TRAP, json!({ "message": "the wasmtime engine failed (panic)", "during": "execute", "reason": "trap" }).to_string(), vec![]);
            }
            notifier2.post(id, kind::EXITED, "{}".into(), vec![]);
        })?;
        Ok(WwInstance { cmds, replies, wake, thread: handle.thread().clone() })
    }

    pub fn execute(&self, descriptor: Vec<u8>, bufs: HostBuffers) -> bool {
        self.wake.before_post();
        let sent = self.cmds.send(Cmd::Execute(descriptor, bufs)).is_ok();
        self.thread.unpark();
        sent
    }

    /// A handle for direct executes on this instance's thread (direct.rs).
    pub fn direct_handle(&self) -> DirectHandle {
        DirectHandle { cmds: self.cmds.clone(), wake: self.wake.clone(), thread: self.thread.clone() }
    }

    pub fn reply(&self, reply: Reply) -> bool {
        self.replies.send(reply).is_ok()
    }

    /// Asks the thread to end (after the call in progress); it reports `EXITED`.
    pub fn stop(&self) {
        let _ = self.cmds.send(Cmd::Stop);
        self.thread.unpark();
    }
}

struct Live {
    store: Store<Guest>,
    sandbox: Sandbox,
    instance: ResourceAny,
}

enum StartError {
    /// A `create` returned an error.
    Guest(crate::bindings::warden::backend::types::Error),
    /// Instantiation failed, or the guest trapped.
    Trap(String),
}

struct Worker {
    engine: Engine,
    /// Ticks while this thread runs guest code (start-up, executes).
    ticker: Arc<Ticker>,
    tick_ms: u64,
    /// Fuel metering on (the engine consumes fuel): each execute reports what it used.
    fuel: bool,
    pre: SandboxPre<Guest>,
    params: InstanceParams,
    live: Option<Live>,
    /// The store data's `Io` while no store exists.
    io: Option<Io>,
}

/// Why a call into the guest failed: `deadline` or `trap`, and a message.
fn classify(e: &wasmtime::Error) -> (&'static str, String) {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) || e.is::<DeadlineExceeded>() {
        return ("deadline", "execute deadline exceeded".into());
    }
    if let Some(x) = e.downcast_ref::<GuestExit>() {
        return ("trap", x.0.clone());
    }
    if let Some(t) = e.downcast_ref::<Trap>() {
        if *t == Trap::StackOverflow {
            return ("trap", "stack overflow (call stack exhausted)".into());
        }
        return ("trap", format!("{t}"));
    }
    ("trap", format!("{e:#}"))
}

impl Worker {
    fn ticks(&self, ms: u64) -> u64 {
        ms.div_ceil(self.tick_ms).max(1) + 1
    }

    fn post(&self, kind: u32, json: Value, bufs: Vec<Vec<u8>>) {
        let io = self
            .io
            .as_ref()
            .map(|io| (io.id, io.notifier.clone()))
            .or_else(|| self.live.as_ref().map(|l| (l.store.data().io.id, l.store.data().io.notifier.clone())));
        if let Some((id, n)) = io {
            n.post(id, kind, json.to_string(), bufs);
        }
    }

    /// Drops the store (if any) and keeps its `Io`.
    fn discard(&mut self) {
        if let Some(live) = self.live.take() {
            let mut guest = live.store.into_data();
            guest.io.end_call();
            guest.io.deadline = None;
            self.io = Some(guest.io);
        }
    }

    /// A fresh store, instance and guest `create`s.
    fn start(&mut self) -> Result<(), StartError> {
        self.discard();
        let mut io = self.io.take().expect("io present without a store");
        let limit = Duration::from_millis(self.params.execute_ms + self.params.boot_ms);
        io.deadline = Some(Instant::now() + limit);
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.params.memory_bytes as usize)
            .memories(self.params.memories as usize)
            .instances(256)
            .tables(256)
            .table_elements(1_000_000)
            .trap_on_grow_failure(false)
            .build();
        let mut store = Store::new(&self.engine, Guest { table: ResourceTable::new(), limits, io, resources: 0 });
        store.limiter(|g| &mut g.limits);
        if self.fuel {
            let _ = store.set_fuel(u64::MAX);
        }
        store.epoch_deadline_trap();
        let ticking = self.ticker.hold();
        store.set_epoch_deadline(self.ticks(limit.as_millis() as u64));
        let r =
            (|| -> wasmtime::Result<Result<(Sandbox, ResourceAny), crate::bindings::warden::backend::types::Error>> {
                let sandbox = self.pre.instantiate(&mut store)?;
                let backend = sandbox.warden_backend_backend();
                let mctx = ModelContext {
                    name: &self.params.model_name,
                    version: self.params.model_version,
                    config: &self.params.config_json,
                };
                let model = match backend.model().call_create(&mut store, mctx)? {
                    Ok(m) => m,
                    Err(e) => return Ok(Err(e)),
                };
                let ictx = InstanceContext {
                    name: &self.params.name,
                    kind: self.params.kind,
                    device_id: self.params.device_id,
                };
                let inst = match backend.instance().call_create(&mut store, model, ictx)? {
                    Ok(i) => i,
                    Err(e) => return Ok(Err(e)),
                };
                Ok(Ok((sandbox, inst)))
            })();
        drop(ticking);
        let out = match r {
            Ok(Ok((sandbox, instance))) => {
                store.data_mut().io.end_call();
                store.data_mut().io.deadline = None;
                self.live = Some(Live { store, sandbox, instance });
                return Ok(());
            }
            Ok(Err(e)) => StartError::Guest(e),
            Err(e) => {
                let (reason, msg) = classify(&e);
                StartError::Trap(if reason == "deadline" {
                    format!("start-up exceeded its deadline of {} ms", limit.as_millis())
                } else {
                    msg
                })
            }
        };
        let mut guest = store.into_data();
        guest.io.end_call();
        guest.io.deadline = None;
        self.io = Some(guest.io);
        Err(out)
    }

    fn run(mut self, cmds: Receiver<Cmd>, wake: &WakeSlot) {
        wake.register();
        let t0 = Instant::now();
        match self.start() {
            Ok(()) => {
                self.post(kind::READY, json!({ "startMs": t0.elapsed().as_secs_f64() * 1e3, "respawn": false }), vec![])
            }
            Err(StartError::Guest(e)) => self.post(kind::CREATE_ERROR, wire::error_json(&e), vec![]),
            Err(StartError::Trap(m)) => {
                self.post(kind::TRAP, json!({ "message": m, "during": "create", "reason": "trap" }), vec![])
            }
        }
        loop {
            let cmd = match cmds.try_recv() {
                Ok(cmd) => cmd,
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) => {
                    // Every send is followed by an unpark (a token: one sent before this park
                    // makes it return at once); a spurious return just loops.
                    wake.wait(std::thread::park);
                    continue;
                }
            };
            match cmd {
                Cmd::Stop => break,
                Cmd::Execute(descriptor, bufs) => wake.work(|| self.execute(&descriptor, bufs)),
                Cmd::Direct(job) => wake.work(|| self.execute_direct(job)),
            }
        }
        self.discard();
    }

    /// A respawn for the execute about to run: its failure is that execute's terminal message.
    fn respawn_for_execute(&mut self) -> bool {
        self.respawn_with(true, false).is_ok()
    }

    fn respawn(&mut self) -> bool {
        self.respawn_with(false, false).is_ok()
    }

    /// Starts the sandbox again; a failure is reported as `RESPAWN_FAILED`, `terminal` when it ends
    /// the execute about to run, `direct` when that execute is a direct one (not the host's).
    /// @returns Err(message) when it failed
    fn respawn_with(&mut self, terminal: bool, direct: bool) -> Result<(), String> {
        let t0 = Instant::now();
        let message = match self.start() {
            Ok(()) => {
                self.post(kind::READY, json!({ "startMs": t0.elapsed().as_secs_f64() * 1e3, "respawn": true }), vec![]);
                return Ok(());
            }
            Err(StartError::Guest(e)) => e.message,
            Err(StartError::Trap(m)) => m,
        };
        self.post(kind::RESPAWN_FAILED, json!({ "message": message, "terminal": terminal, "direct": direct }), vec![]);
        Err(message)
    }

    /// Runs a direct execute (direct.rs): the same deadline, limits, fuel and trap handling as
    /// [`Worker::execute`]; the guest's answers go to the job's sink, and the host hears of the
    /// execute only what it must (its logs and file calls as they happen, `END_CALL` after it if
    /// it posted any, a trap marked `direct`).
    fn execute_direct(&mut self, job: DirectExecute) {
        let DirectExecute { requests, sink } = job;
        if self.live.is_none() {
            if let Err(m) = self.respawn_with(true, true) {
                sink.finish(DirectOutcome::RespawnFailed(m));
                return;
            }
        }
        let tensors: Vec<Vec<TensorParam<'_>>> = requests
            .iter()
            .map(|r| {
                r.inputs
                    .iter()
                    .map(|t| TensorParam {
                        name: &t.name,
                        datatype: t.datatype,
                        shape: &t.shape,
                        data: (*t.data).as_ref(),
                    })
                    .collect()
            })
            .collect();
        let outputs: Vec<Vec<&str>> =
            requests.iter().map(|r| r.requested_outputs.iter().map(|s| &**s).collect()).collect();
        let wit: Vec<Request<'_>> = requests
            .iter()
            .zip(&tensors)
            .zip(&outputs)
            .map(|((r, inputs), requested)| Request {
                handle: r.handle,
                id: &r.id,
                correlation_id: CorrelationId::None,
                flags: RequestFlags::empty(),
                priority: 0,
                timeout_us: 0,
                batch_size: r.batch_size,
                inputs,
                requested_outputs: requested,
                parameters: &[],
            })
            .collect();
        let ticks = self.ticks(self.params.execute_ms);
        let live = self.live.as_mut().unwrap();
        let io = &mut live.store.data_mut().io;
        io.deadline = Some(Instant::now() + Duration::from_millis(self.params.execute_ms));
        io.direct = Some(sink);
        io.posted = false;
        live.store.set_epoch_deadline(ticks);
        if self.fuel {
            let _ = live.store.set_fuel(u64::MAX);
        }
        let ticking = self.ticker.hold();
        let start_ns = monotonic_ns();
        let r = live.sandbox.warden_backend_backend().instance().call_execute(&mut live.store, live.instance, &wit);
        let end_ns = monotonic_ns();
        drop(ticking);
        drop(wit);
        drop(outputs);
        drop(tensors);
        let io = &mut live.store.data_mut().io;
        let sink = io.direct.take();
        match r {
            Ok(results) => {
                io.deadline = None;
                io.end_call();
                if io.posted {
                    io.post(kind::END_CALL, json!({}), vec![]);
                }
                drop(requests);
                if let Some(sink) = sink {
                    sink.finish(DirectOutcome::Returned {
                        results,
                        compute_start_ns: start_ns,
                        compute_end_ns: end_ns,
                    });
                }
            }
            Err(e) => {
                let (reason, message) = classify(&e);
                self.discard();
                self.post(
                    kind::TRAP,
                    json!({ "message": message, "during": "execute", "reason": reason, "direct": true }),
                    vec![],
                );
                drop(requests);
                let finalized = e.is::<Finalized>();
                if let Some(sink) = sink {
                    sink.finish(if finalized {
                        DirectOutcome::Gone
                    } else if reason == "deadline" {
                        DirectOutcome::Deadline
                    } else {
                        DirectOutcome::Trapped(message)
                    });
                }
                if !finalized {
                    self.respawn();
                }
            }
        }
    }

    fn execute(&mut self, descriptor: &[u8], bufs: HostBuffers) {
        if self.live.is_none() && !self.respawn_for_execute() {
            return;
        }
        let slices: Vec<&[u8]> = bufs
            .0
            .iter()
            // SAFETY: see HostBuffers; the slices are dropped before this execute's terminal message.
            .map(|&(p, n)| unsafe { warden_ffi::slice(p as *const u8, n) })
            .collect();
        let parts = match descriptor::request_parts(descriptor, &slices) {
            Ok(r) => r,
            Err(m) => {
                self.post(kind::TRAP, json!({ "message": format!("host sent a malformed request: {m}"), "during": "execute", "reason": "trap" }), vec![]);
                return;
            }
        };
        let tensors = wire::tensors(&parts);
        let requests = wire::requests(&parts, &tensors);
        let ticks = self.ticks(self.params.execute_ms);
        let live = self.live.as_mut().unwrap();
        live.store.data_mut().io.deadline = Some(Instant::now() + Duration::from_millis(self.params.execute_ms));
        live.store.set_epoch_deadline(ticks);
        if self.fuel {
            let _ = live.store.set_fuel(u64::MAX);
        }
        let ticking = self.ticker.hold();
        let start_ns = monotonic_ns();
        let r =
            live.sandbox.warden_backend_backend().instance().call_execute(&mut live.store, live.instance, &requests);
        let end_ns = monotonic_ns();
        drop(ticking);
        let fuel = if self.fuel { live.store.get_fuel().ok().map(|left| u64::MAX - left) } else { None };
        drop(requests);
        drop(tensors);
        drop(parts);
        drop(slices);
        match r {
            Ok(results) => {
                let io = &mut live.store.data_mut().io;
                io.deadline = None;
                io.end_call();
                let mut out = Vec::with_capacity(results.len() + 1);
                let desc = descriptor::results(results, start_ns, end_ns, fuel, &mut out);
                // the results descriptor travels as the last buffer (no JSON)
                out.push(desc);
                let n = &live.store.data().io;
                n.notifier.post(n.id, kind::DONE, String::new(), out);
            }
            Err(e) => {
                let (reason, message) = classify(&e);
                self.discard();
                self.post(kind::TRAP, json!({ "message": message, "during": "execute", "reason": reason }), vec![]);
                if !e.is::<Finalized>() {
                    self.respawn();
                }
            }
        }
    }
}
