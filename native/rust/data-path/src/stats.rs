//! Statistics of the requests the data path served for one route, accumulated with atomics and
//! taken (read and reset) by the control plane, which adds them to the model version's own
//! statistics (spec §3.2, the `statistics` extension) and Prometheus series: one set of figures
//! whichever path served a request.
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Counters since the last take. Durations in ns.
#[derive(Default)]
pub struct RouteStats {
    success_count: AtomicU64,
    success_ns: AtomicU64,
    fail_count: AtomicU64,
    fail_ns: AtomicU64,
    queue_ns: AtomicU64,
    compute_input_ns: AtomicU64,
    compute_infer_ns: AtomicU64,
    compute_output_ns: AtomicU64,
    /// Requests with backend-reported timings (queue and compute sums cover these).
    timed_count: AtomicU64,
    inference_count: AtomicU64,
    execution_count: AtomicU64,
    /// Executions with batch statistics of batch size 1 (the data path submits one request per
    /// execute, so most are), and of every other size in `batches`.
    batch1_count: AtomicU64,
    batch1_input_ns: AtomicU64,
    batch1_infer_ns: AtomicU64,
    batch1_output_ns: AtomicU64,
    batches: Mutex<Vec<BatchStats>>,
    last_inference_ms: AtomicU64,
    /// The latest successful requests' end-to-end durations and the latest queue times (µs), for
    /// the control plane's `latency_percentiles_us` (metrics/latency-window.ts keeps as many).
    recent_request_us: Recent,
    recent_queue_us: Recent,
}

/// How many of the latest durations a route keeps between takes (metrics/latency-window.ts's window).
pub const RECENT: usize = 512;

/// The latest [`RECENT`] values written, without a lock: a writer claims a slot by a counter; a
/// take reads the slots written since the last one (at most [`RECENT`], the newest). A slot
/// overwritten while it is read gives a newer value, which a window of latest durations tolerates.
pub struct Recent {
    slots: [AtomicU32; RECENT],
    written: AtomicU64,
    taken: AtomicU64,
}

impl Default for Recent {
    fn default() -> Recent {
        Recent {
            slots: std::array::from_fn(|_| AtomicU32::new(0)),
            written: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        }
    }
}

impl Recent {
    fn push(&self, v: u32) {
        let i = self.written.fetch_add(1, Ordering::Relaxed);
        self.slots[(i % RECENT as u64) as usize].store(v, Ordering::Relaxed);
    }

    /// Copies the values written since the last take, oldest first, into `out`. @returns how many
    pub fn take(&self, out: &mut [u32; RECENT]) -> usize {
        let end = self.written.load(Ordering::Acquire);
        let start = self.taken.swap(end, Ordering::AcqRel).max(end.saturating_sub(RECENT as u64));
        let n = end.saturating_sub(start) as usize;
        for (k, slot) in out.iter_mut().take(n).enumerate() {
            *slot = self.slots[((start + k as u64) % RECENT as u64) as usize].load(Ordering::Relaxed);
        }
        n
    }
}

/// ns as whole µs, saturating (a duration past 71 minutes reads as u32::MAX µs).
fn us(ns: u64) -> u32 {
    u32::try_from(ns / 1000).unwrap_or(u32::MAX)
}

/// `WdBatchStats` (warden/data_path.h): executions of one batch size other than 1 since the last take.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchStats {
    pub batch_size: u64,
    pub count: u64,
    pub input_ns: u64,
    pub infer_ns: u64,
    pub output_ns: u64,
}

/// `WdRouteStats` (warden/data_path.h): what {@link RouteStats::take} returns.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub success_count: u64,
    pub success_ns: u64,
    pub fail_count: u64,
    pub fail_ns: u64,
    pub timed_count: u64,
    pub queue_ns: u64,
    pub compute_input_ns: u64,
    pub compute_infer_ns: u64,
    pub compute_output_ns: u64,
    pub inference_count: u64,
    pub execution_count: u64,
    pub batch1_count: u64,
    pub batch1_input_ns: u64,
    pub batch1_infer_ns: u64,
    pub batch1_output_ns: u64,
    pub last_inference_ms: u64,
}

fn add(a: &AtomicU64, v: u64) {
    a.fetch_add(v, Ordering::Relaxed);
}

impl RouteStats {
    /// A request that succeeded after `ns` end to end, carrying `batch` batch elements.
    pub fn success(&self, ns: u64, batch: u64, now_ms: u64) {
        add(&self.success_count, 1);
        add(&self.success_ns, ns);
        add(&self.inference_count, batch);
        self.last_inference_ms.fetch_max(now_ms, Ordering::Relaxed);
        self.recent_request_us.push(us(ns));
    }

    /// A request that failed after `ns`.
    pub fn failure(&self, ns: u64) {
        add(&self.fail_count, 1);
        add(&self.fail_ns, ns);
    }

    /// A request's queue and compute times (the backend's TRITONBACKEND_ModelInstanceReportStatistics).
    pub fn request_times(&self, queue: u64, input: u64, infer: u64, output: u64) {
        add(&self.timed_count, 1);
        add(&self.queue_ns, queue);
        self.recent_queue_us.push(us(queue));
        add(&self.compute_input_ns, input);
        add(&self.compute_infer_ns, infer);
        add(&self.compute_output_ns, output);
    }

    /// One backend execution of batch size `batch` (TRITONBACKEND_ModelInstanceReportBatchStatistics).
    pub fn execution(&self, batch: u64, input: u64, infer: u64, output: u64) {
        add(&self.execution_count, 1);
        if batch == 1 {
            add(&self.batch1_count, 1);
            add(&self.batch1_input_ns, input);
            add(&self.batch1_infer_ns, infer);
            add(&self.batch1_output_ns, output);
            return;
        }
        let mut rows = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        let i = match rows.iter().position(|r| r.batch_size == batch) {
            Some(i) => i,
            None => {
                rows.push(BatchStats { batch_size: batch, ..BatchStats::default() });
                rows.len() - 1
            }
        };
        let r = &mut rows[i];
        r.count += 1;
        r.input_ns += input;
        r.infer_ns += infer;
        r.output_ns += output;
    }

    /// The latest end-to-end durations of successful requests (µs) since the last take, oldest first.
    pub fn take_recent_requests(&self, out: &mut [u32; RECENT]) -> usize {
        self.recent_request_us.take(out)
    }

    /// The latest queue times (µs) since the last take, oldest first.
    pub fn take_recent_queues(&self, out: &mut [u32; RECENT]) -> usize {
        self.recent_queue_us.take(out)
    }

    /// Moves up to `out.len()` batch sizes' rows (other than 1) into `out`.
    /// @returns how many (fewer than `out.len()`: none are left)
    pub fn take_batches(&self, out: &mut [BatchStats]) -> usize {
        let mut rows = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        let n = rows.len().min(out.len());
        for (slot, row) in out.iter_mut().zip(rows.drain(..n)) {
            *slot = row;
        }
        n
    }

    /// Reads and resets every counter (last_inference_ms is kept: it is a time, not a sum).
    pub fn take(&self) -> StatsSnapshot {
        let t = |a: &AtomicU64| a.swap(0, Ordering::Relaxed);
        StatsSnapshot {
            success_count: t(&self.success_count),
            success_ns: t(&self.success_ns),
            fail_count: t(&self.fail_count),
            fail_ns: t(&self.fail_ns),
            timed_count: t(&self.timed_count),
            queue_ns: t(&self.queue_ns),
            compute_input_ns: t(&self.compute_input_ns),
            compute_infer_ns: t(&self.compute_infer_ns),
            compute_output_ns: t(&self.compute_output_ns),
            inference_count: t(&self.inference_count),
            execution_count: t(&self.execution_count),
            batch1_count: t(&self.batch1_count),
            batch1_input_ns: t(&self.batch1_input_ns),
            batch1_infer_ns: t(&self.batch1_infer_ns),
            batch1_output_ns: t(&self.batch1_output_ns),
            last_inference_ms: self.last_inference_ms.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executions_are_kept_by_batch_size() {
        let s = RouteStats::default();
        s.execution(1, 1, 2, 3);
        s.execution(8, 10, 20, 30);
        s.execution(4, 1, 1, 1);
        s.execution(8, 10, 20, 30);
        let snap = s.take();
        assert_eq!((snap.execution_count, snap.batch1_count, snap.batch1_infer_ns), (4, 1, 2));
        let mut out = [BatchStats::default(); 1];
        assert_eq!(s.take_batches(&mut out), 1);
        assert_eq!(out[0], BatchStats { batch_size: 8, count: 2, input_ns: 20, infer_ns: 40, output_ns: 60 });
        assert_eq!(s.take_batches(&mut out), 1);
        assert_eq!(out[0].batch_size, 4);
        assert_eq!(s.take_batches(&mut out), 0, "taken");
    }

    #[test]
    fn the_latest_durations_are_kept_between_takes() {
        let s = RouteStats::default();
        let mut out = [0u32; RECENT];
        assert_eq!(s.take_recent_requests(&mut out), 0);
        s.success(5_000, 1, 0);
        s.success(7_999, 1, 0);
        assert_eq!(s.take_recent_requests(&mut out), 2);
        assert_eq!(&out[..2], &[5, 7], "µs, oldest first");
        assert_eq!(s.take_recent_requests(&mut out), 0, "taken");
        for i in 0..(RECENT as u64 + 100) {
            s.request_times(i * 1000, 0, 0, 0);
        }
        assert_eq!(s.take_recent_queues(&mut out), RECENT, "at most the window");
        assert_eq!((out[0], out[RECENT - 1]), (100, RECENT as u32 + 99), "the newest");
    }
}
