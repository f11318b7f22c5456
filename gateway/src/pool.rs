//! An elastic worker pool: a job never waits behind a blocked job while the
//! pool is below its thread cap, because a new worker is started whenever
//! every existing one is busy. Idle workers exit after a while.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::console::lock;

type Job = Box<dyn FnOnce() + Send>;

/// How long an idle worker above the minimum waits before exiting.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    work: Condvar,
    min_threads: usize,
    max_threads: usize,
}

struct State {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
    shutdown: bool,
}

impl Pool {
    pub(crate) fn new(min_threads: usize, max_threads: usize) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    threads: 0,
                    idle: 0,
                    shutdown: false,
                }),
                work: Condvar::new(),
                min_threads,
                max_threads: max_threads.max(1),
            }),
        }
    }

    /// Worker threads now: (all, busy with a job).
    pub(crate) fn threads(&self) -> (usize, usize) {
        let st = lock(&self.shared.state);
        (st.threads, st.threads - st.idle.min(st.threads))
    }

    /// Queues `job`; starts a worker if every worker is busy.
    pub(crate) fn execute(&self, job: impl FnOnce() + Send + 'static) {
        let mut st = lock(&self.shared.state);
        st.queue.push_back(Box::new(job));
        if st.queue.len() > st.idle && st.threads < self.shared.max_threads {
            st.threads += 1;
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new()
                .name("gateway-worker".into())
                .spawn(move || worker(&shared));
            if let Err(e) = spawned {
                st.threads -= 1;
                tracing::warn!("gateway: cannot start a worker thread: {e}");
                if st.threads == 0 {
                    // Nobody could run the job: run it here rather than lose
                    // a reply.
                    if let Some(job) = st.queue.pop_back() {
                        drop(st);
                        job();
                    }
                    return;
                }
            }
        }
        drop(st);
        self.shared.work.notify_one();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        lock(&self.shared.state).shutdown = true;
        self.shared.work.notify_all();
    }
}

fn worker(shared: &Shared) {
    let mut st = lock(&shared.state);
    loop {
        if let Some(job) = st.queue.pop_front() {
            drop(st);
            // A panicking job must not take the worker (and its accounting) down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            st = lock(&shared.state);
            continue;
        }
        if st.shutdown {
            break;
        }
        st.idle += 1;
        let (guard, timeout) = shared
            .work
            .wait_timeout(st, IDLE_TIMEOUT)
            .unwrap_or_else(PoisonError::into_inner);
        st = guard;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() && st.threads > shared.min_threads {
            break;
        }
    }
    st.threads -= 1;
}
