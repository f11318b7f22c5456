//! The in-partition test kernel.
//!
//! With no arguments it runs every test in [`TESTS`] inside the partition and
//! reports each on stdout (`test NAME ... ok` or `... FAILED: why`), then a
//! summary line; the exit status is 0 only if all passed. With arguments it
//! runs one scenario that the host-side integration tests drive (exit codes,
//! panics, faults, threads, preemption, sleep, context-switch timing).
#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use astraea_libos::mm::paging::{PageSize, PteFlags};
use astraea_libos::sched::{self, WaitQueue};
use astraea_libos::{BootConfig, mm, println, time};

astraea_libos::entry!(main);

type TestResult = Result<(), String>;
/// A named in-partition test.
type Test = (&'static str, fn() -> TestResult);

macro_rules! check {
    ($cond:expr, $($msg:tt)*) => {
        if !$cond {
            return Err(format!($($msg)*));
        }
    };
}

/// Every in-partition test, in the order it runs.
const TESTS: &[Test] = &[
    ("heap_small_and_large", heap_small_and_large),
    ("heap_many_objects", heap_many_objects),
    ("frames_aligned_alloc_free", frames_aligned_alloc_free),
    ("paging_kernel_map", paging_kernel_map),
    ("paging_stack_guard", paging_stack_guard),
    ("time_monotonic_and_wall", time_monotonic_and_wall),
    ("threads_spawn_join", threads_spawn_join),
    ("waitqueue_handoff", waitqueue_handoff),
    ("waitqueue_timed", waitqueue_timed),
    ("sleep_orders_wakeups", sleep_orders_wakeups),
    ("preempt_spinning_thread", preempt_spinning_thread),
];

fn main(cfg: &BootConfig) -> i32 {
    let args: Vec<&str> = cfg.args.iter().map(String::as_str).collect();
    match args.as_slice() {
        [] | ["all"] => run_all(None),
        ["test", name] => run_all(Some(name)),
        ["exit", code] => code.parse().unwrap_or(2),
        ["panic", msg @ ..] => panic!("{}", msg.join(" ")),
        ["fault", kind] => fault(kind),
        ["threads", n, yields] => threads(parse(n), parse(yields)),
        ["spin"] => spin(),
        ["lock", kind] => lock_discipline(kind),
        ["sleep", ms] => sleep(parse(ms)),
        ["pingpong", rounds] => pingpong(parse(rounds)),
        ["9p-files"] => ninep_files(),
        ["9p-hostile"] => ninep_hostile(),
        ["9p-console-env", var] => ninep_console_env(var),
        ["9p-bench", file, n] => ninep_bench(file, parse(n) as usize),
        ["banner"] => {
            println!("booted in {} us", cfg.boot_ns / 1000);
            0
        }
        other => {
            astraea_libos::eprintln!("astraea-ktest: unknown scenario {other:?}");
            2
        }
    }
}

fn parse(s: &str) -> u64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

fn run_all(only: Option<&str>) -> i32 {
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in TESTS {
        if only.is_some_and(|o| o != *name) {
            continue;
        }
        let t0 = time::monotonic_ns();
        let result = test();
        let ms = (time::monotonic_ns() - t0) / 1_000_000;
        match result {
            Ok(()) => {
                passed += 1;
                println!("test {name} ... ok ({ms} ms)");
            }
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED: {why} ({ms} ms)");
            }
        }
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    println!("test result: {verdict}. {passed} passed; {failed} failed");
    i32::from(failed != 0)
}

// ---- in-partition tests ----

fn heap_small_and_large() -> TestResult {
    let before = mm::stats();
    {
        let small: Vec<alloc::boxed::Box<u64>> = (0..1000).map(alloc::boxed::Box::new).collect();
        check!(
            small.iter().enumerate().all(|(i, b)| **b == i as u64),
            "small boxes corrupted"
        );
        let big = alloc::vec![0xa5u8; 3 << 20];
        // Sample rather than scan: ring-0 code may run emulated (see docs/pvm.md).
        check!(
            big.iter().step_by(4093).all(|&b| b == 0xa5),
            "3 MiB vector corrupted"
        );
        let aligned =
            alloc::alloc::Layout::from_size_align(256, 256).map_err(|e| format!("{e}"))?;
        // SAFETY: the layout has non-zero size; the pointer is freed right after.
        let p = unsafe { alloc::alloc::alloc(aligned) };
        check!(
            !p.is_null() && (p as usize).is_multiple_of(256),
            "256-aligned allocation at {p:p}"
        );
        // SAFETY: allocated above with the same layout.
        unsafe { alloc::alloc::dealloc(p, aligned) };
    }
    let after = mm::stats();
    // The 3 MiB buffer went back to the frame allocator.
    check!(
        after.free_pages + 64 >= before.free_pages,
        "pages leaked: {} free before, {} after",
        before.free_pages,
        after.free_pages
    );
    Ok(())
}

fn heap_many_objects() -> TestResult {
    let mut m = BTreeMap::new();
    for i in 0..500u64 {
        m.insert(
            i.wrapping_mul(2_654_435_761) % 100_003,
            format!("value-{i}"),
        );
    }
    check!(m.len() == 500, "expected 500 keys, got {}", m.len());
    let sum: usize = m.values().map(String::len).sum();
    check!(sum > 500 * 7, "values corrupted");
    for i in (0..500u64).step_by(2) {
        m.remove(&(i.wrapping_mul(2_654_435_761) % 100_003));
    }
    check!(
        m.len() == 250,
        "expected 250 keys after removal, got {}",
        m.len()
    );
    Ok(())
}

fn frames_aligned_alloc_free() -> TestResult {
    let free = mm::stats().free_pages;
    let a = mm::alloc_frames(512, 512).ok_or("no 2 MiB-aligned run")?;
    check!(a.is_multiple_of(2 << 20), "{a:#x} not 2 MiB aligned");
    check!(
        mm::stats().free_pages == free - 512,
        "free count off after alloc"
    );
    mm::free_frames(a, 512);
    check!(mm::stats().free_pages == free, "free count off after free");
    Ok(())
}

fn paging_kernel_map() -> TestResult {
    let code = paging_kernel_map as *const () as u64;
    let t = mm::translate(code).ok_or("kernel code not mapped")?;
    check!(
        t.pa == mm::virt_to_phys(code),
        "kernel code not in the direct map"
    );
    check!(!t.flags.contains(PteFlags::NO_EXECUTE), "kernel code is NX");
    check!(
        t.size == PageSize::Size4K,
        "kernel image should use 4 KiB pages"
    );
    let heap = alloc::vec![0u8; 1 << 20];
    let h = mm::translate(heap.as_ptr() as u64).ok_or("heap not mapped")?;
    check!(h.flags.contains(PteFlags::NO_EXECUTE), "heap is executable");
    check!(h.flags.contains(PteFlags::WRITABLE), "heap is read-only");
    // On a PVM host running the kernel natively, kernel pages must be user
    // pages (docs/pvm.md); elsewhere they must not be.
    let pvm = astraea_libos::arch::cpu::pvm_native();
    check!(
        h.flags.contains(PteFlags::USER) == pvm,
        "kernel heap USER bit is {} with pvm_native={pvm}",
        h.flags.contains(PteFlags::USER)
    );
    check!(mm::translate(0).is_none(), "page 0 is mapped");
    check!(mm::translate(0x10).is_none(), "null + 16 is mapped");
    Ok(())
}

fn paging_stack_guard() -> TestResult {
    let stack = mm::KernelStack::new(4).ok_or("no stack")?;
    check!(mm::translate(stack.guard()).is_none(), "guard page mapped");
    check!(
        mm::translate(stack.guard() + 4096).is_some(),
        "stack page unmapped"
    );
    let guard = stack.guard();
    drop(stack);
    // A freed stack is kept for reuse with its guard page still unmapped...
    let again = mm::KernelStack::new(4).ok_or("no stack")?;
    check!(again.guard() == guard, "a freed stack was not reused");
    check!(
        mm::translate(guard).is_none(),
        "a reused stack's guard page is mapped"
    );
    drop(again);
    // ...until the cache is full: then its guard page is mapped back.
    let many = (0..=mm::STACK_CACHE_MAX)
        .map(|_| mm::KernelStack::new(4))
        .collect::<Option<Vec<_>>>()
        .ok_or("no stacks")?;
    let guards: Vec<u64> = many.iter().map(mm::KernelStack::guard).collect();
    check!(
        guards.iter().all(|&g| mm::translate(g).is_none()),
        "a live stack's guard page is mapped"
    );
    drop(many);
    check!(
        guards.iter().any(|&g| mm::translate(g).is_some()),
        "no guard page restored on free once the cache was full"
    );
    Ok(())
}

fn time_monotonic_and_wall() -> TestResult {
    let a = time::monotonic_ns();
    let b = time::monotonic_ns();
    check!(b >= a, "monotonic went back: {a} then {b}");
    let wall_s = time::realtime_ns() / 1_000_000_000;
    // 2020-01-01 .. 2100-01-01
    check!(
        (1_577_836_800..4_102_444_800).contains(&wall_s),
        "wall clock {wall_s} s is implausible"
    );
    check!(
        time::tsc_khz() > 100_000,
        "TSC frequency {} kHz",
        time::tsc_khz()
    );
    Ok(())
}

fn threads_spawn_join() -> TestResult {
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..10)
        .map(|i| {
            let c = count.clone();
            sched::spawn(&format!("worker-{i}"), move || {
                for _ in 0..10 {
                    c.fetch_add(1, Ordering::Relaxed);
                    sched::yield_now();
                }
            })
            .ok_or("spawn failed")
        })
        .collect::<Result<_, _>>()?;
    for h in handles {
        h.join();
    }
    check!(
        count.load(Ordering::Relaxed) == 100,
        "count {}",
        count.load(Ordering::Relaxed)
    );
    Ok(())
}

fn waitqueue_handoff() -> TestResult {
    let wq = Arc::new(WaitQueue::new());
    let flag = Arc::new(AtomicBool::new(false));
    let (w, f) = (wq.clone(), flag.clone());
    let h = sched::spawn("waiter", move || {
        w.wait_while(|| !f.load(Ordering::Acquire))
    })
    .ok_or("spawn failed")?;
    sched::yield_now(); // let the waiter block
    flag.store(true, Ordering::Release);
    let woke = wq.wake_all();
    h.join();
    check!(woke == 1, "expected to wake 1 waiter, woke {woke}");
    Ok(())
}

/// `wait_while_until`: runs out at its deadline, or ends early when woken;
/// either way the thread leaves the queue (a later wake finds nobody).
fn waitqueue_timed() -> TestResult {
    let wq = Arc::new(WaitQueue::new());
    let deadline = time::monotonic_ns() + 20_000_000;
    let timed_out = wq.wait_while_until(Some(deadline), || true);
    check!(
        timed_out,
        "a wait on a false wake-up condition did not time out"
    );
    check!(
        time::monotonic_ns() >= deadline,
        "the timed wait ended before its deadline"
    );
    check!(wq.wake_all() == 0, "a timed-out waiter stayed on the queue");

    let flag = Arc::new(AtomicBool::new(false));
    let (w, f) = (wq.clone(), flag.clone());
    let far = time::monotonic_ns() + 60_000_000_000;
    let h = sched::spawn("timed waiter", move || {
        let out = w.wait_while_until(Some(far), || !f.load(Ordering::Acquire));
        assert!(!out, "woken, yet reported a timeout");
    })
    .ok_or("spawn failed")?;
    sched::yield_now(); // let the waiter block
    flag.store(true, Ordering::Release);
    let woke = wq.wake_all();
    h.join();
    check!(woke == 1, "expected to wake 1 waiter, woke {woke}");
    check!(wq.wake_all() == 0, "a woken waiter stayed on the queue");
    Ok(())
}

fn sleep_orders_wakeups() -> TestResult {
    let order = Arc::new(astraea_libos::sync::IrqLock::new(Vec::new()));
    // Deadlines from one start time, 20 ms apart, so that how long each
    // thread takes to start does not matter.
    let t0 = time::monotonic_ns();
    let hs: Vec<_> = [3u64, 1, 2]
        .into_iter()
        .map(|ms| {
            let o = order.clone();
            sched::spawn("sleeper", move || {
                sched::sleep_until_ns(t0 + ms * 20_000_000);
                o.lock().push(ms);
            })
            .ok_or("spawn failed")
        })
        .collect::<Result<_, _>>()?;
    for h in hs {
        h.join();
    }
    let got = order.lock().clone();
    check!(got == [1, 2, 3], "woke in order {got:?}");
    Ok(())
}

fn preempt_spinning_thread() -> TestResult {
    if spin() == 0 {
        Ok(())
    } else {
        Err("spinner was not preempted".into())
    }
}

// ---- scenarios ----

fn fault(kind: &str) -> i32 {
    // SAFETY: each arm deliberately raises the exception the test expects;
    // the kernel reports it and ends the partition.
    unsafe {
        match kind {
            "ud" => core::arch::asm!("ud2"),
            "pf" => {
                let p = core::hint::black_box(0x7ead_0000_0000u64) as *const u64;
                core::ptr::read_volatile(p);
            }
            "null" => {
                let p = core::hint::black_box(8usize) as *const u64;
                core::ptr::read_volatile(p);
            }
            "de" => {
                core::arch::asm!("xor edx, edx", "xor eax, eax", "xor ecx, ecx", "div ecx", out("eax") _, out("edx") _, out("ecx") _)
            }
            "triple" => {
                // An empty IDT: the breakpoint cannot be delivered, nor the
                // resulting faults, so the CPU shuts down.
                let empty = [0u16; 5];
                core::arch::asm!("lidt [{}]", "int3", in(reg) empty.as_ptr());
            }
            "mmio" => {
                let va = mm::map_mmio(0xd010_0000, 4096).expect("map");
                core::ptr::write_volatile(va as *mut u32, 1);
            }
            "gp" => core::arch::asm!("mov rax, 0x8000000000000000", "mov rax, [rax]", out("rax") _),
            "stack" => {
                let h = sched::spawn("overflow", || {
                    core::hint::black_box(recurse(0));
                })
                .expect("spawn");
                h.join();
            }
            _ => return 2,
        }
    }
    1
}

/// Recurses until the stack guard page stops it (the depth check only keeps
/// the compiler from proving the recursion endless).
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    let buf = core::hint::black_box([depth; 64]);
    if buf[0] == u64::MAX {
        return 0;
    }
    buf[7] + recurse(depth + 1)
}

fn threads(n: u64, yields: u64) -> i32 {
    let total = Arc::new(AtomicU64::new(0));
    let t0 = time::monotonic_ns();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let t = total.clone();
            sched::spawn(&format!("t{i}"), move || {
                for _ in 0..yields {
                    t.fetch_add(1, Ordering::Relaxed);
                    sched::yield_now();
                }
            })
            .expect("spawn")
        })
        .collect();
    for h in handles {
        h.join();
    }
    let s = sched::stats();
    println!(
        "threads={n} yields={} switches={} elapsed_us={}",
        total.load(Ordering::Relaxed),
        s.switches,
        (time::monotonic_ns() - t0) / 1000
    );
    0
}

/// A thread spins until told to stop; the main thread can only tell it if
/// the timer preempts the spinner.
/// Breaks the lock discipline on purpose: `reenter` takes a lock its holder
/// already has, `sleep` sleeps holding one. Both must panic naming the
/// places, never hang.
fn lock_discipline(kind: &str) -> i32 {
    static L: astraea_libos::sync::IrqLock<u32> = astraea_libos::sync::IrqLock::new(0);
    let held = L.lock();
    match kind {
        "reenter" => {
            let again = L.lock();
            drop(again);
        }
        "sleep" => sched::sleep_ns(1_000_000),
        _ => return 2,
    }
    drop(held);
    0
}

fn spin() -> i32 {
    static STOP: AtomicBool = AtomicBool::new(false);
    static SPUN: AtomicU64 = AtomicU64::new(0);
    STOP.store(false, Ordering::SeqCst);
    let before = sched::stats().preemptions;
    let h = sched::spawn("spinner", || {
        while !STOP.load(Ordering::Relaxed) {
            SPUN.fetch_add(1, Ordering::Relaxed);
            core::hint::spin_loop();
        }
    })
    .expect("spawn");
    sched::yield_now(); // the spinner runs now and never yields
    STOP.store(true, Ordering::SeqCst);
    h.join();
    let preempted = sched::stats().preemptions - before;
    println!(
        "spinner preempted {preempted} times after {} spins",
        SPUN.load(Ordering::Relaxed)
    );
    i32::from(preempted == 0)
}

fn sleep(ms: u64) -> i32 {
    let t0 = time::monotonic_ns();
    sched::sleep_ns(ms * 1_000_000);
    println!("slept_us={}", (time::monotonic_ns() - t0) / 1000);
    0
}

/// Two threads hand a token back and forth through wait queues; prints the
/// time per round trip (two context switches).
fn pingpong(rounds: u64) -> i32 {
    struct Court {
        turn: AtomicU64,
        wq: [WaitQueue; 2],
    }
    let court = Arc::new(Court {
        turn: AtomicU64::new(0),
        wq: [WaitQueue::new(), WaitQueue::new()],
    });
    let player = |me: u64| {
        let c = court.clone();
        move || {
            for _ in 0..rounds {
                c.wq[me as usize].wait_while(|| c.turn.load(Ordering::Acquire) != me);
                c.turn.store(1 - me, Ordering::Release);
                c.wq[(1 - me) as usize].wake_one();
            }
        }
    };
    let t0 = time::monotonic_ns();
    let a = sched::spawn("ping", player(0)).expect("spawn");
    let b = sched::spawn("pong", player(1)).expect("spawn");
    a.join();
    b.join();
    let ns = time::monotonic_ns() - t0;
    println!(
        "pingpong rounds={rounds} total_ns={ns} ns_per_round={}",
        ns / rounds.max(1)
    );
    0
}

/// Exercises the mounted 9P namespace the way the host-side test expects:
/// lists `/`, reads `hello.txt`, writes `new.txt`, makes `sub/`, renames
/// `new.txt` to `sub/moved.txt`, deletes `delete-me.txt`, and prints what it
/// saw. Any failure prints `9p error: …` and exits 1.
fn ninep_files() -> i32 {
    match ninep_steps() {
        Ok(()) => 0,
        Err(e) => {
            println!("9p error: {e}");
            1
        }
    }
}

fn ninep_steps() -> Result<(), String> {
    use astraea_libos::p9;
    const O_RDONLY: u32 = 0;
    const O_WRONLY: u32 = 1;
    const AT_REMOVEDIR: u32 = 0x200;
    let c = p9::mounted().ok_or("no 9P namespace mounted")?;
    let e = |what: &str| {
        let what = String::from(what);
        move |err: astraea_libos::errno::Errno| format!("{what}: {err}")
    };
    let root = c.walk(c.root(), &[]).map_err(e("walk /"))?;
    c.open(root, O_RDONLY | 0o200000).map_err(e("open /"))?;
    let mut names: Vec<String> = c
        .readdir(root)
        .map_err(e("readdir /"))?
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n != "." && n != "..")
        .collect();
    names.sort();
    c.clunk(root);
    println!("ls: {}", names.join(" "));

    let f = c.walk_path("/hello.txt").map_err(e("walk hello.txt"))?;
    let size = c.getattr(f).map_err(e("getattr hello.txt"))?.size;
    c.open(f, O_RDONLY).map_err(e("open hello.txt"))?;
    let data = c.read_all(f).map_err(e("read hello.txt"))?;
    c.clunk(f);
    println!(
        "hello.txt ({size} bytes): {}",
        String::from_utf8_lossy(&data).trim_end()
    );

    let dir = c.walk(c.root(), &[]).map_err(e("walk /"))?;
    c.create(dir, "new.txt", O_WRONLY | 0o100, 0o644)
        .map_err(e("create new.txt"))?;
    let msg = b"written by the partition\n";
    let n = c.write(dir, 0, msg).map_err(e("write new.txt"))?;
    c.fsync(dir).map_err(e("fsync new.txt"))?;
    c.clunk(dir);
    println!("wrote {n} bytes to new.txt");

    c.mkdir(c.root(), "sub", 0o755).map_err(e("mkdir sub"))?;
    let sub = c.walk_path("/sub").map_err(e("walk sub"))?;
    c.renameat(c.root(), "new.txt", sub, "moved.txt")
        .map_err(e("rename"))?;
    c.clunk(sub);
    c.unlinkat(c.root(), "delete-me.txt", 0)
        .map_err(e("unlink delete-me.txt"))?;
    c.mkdir(c.root(), "gone", 0o755).map_err(e("mkdir gone"))?;
    c.unlinkat(c.root(), "gone", AT_REMOVEDIR)
        .map_err(e("rmdir gone"))?;
    // POSIX record locks: two opens of one file are two lock owners.
    {
        use astraea_9p::consts::{P9_LOCK_SUCCESS, P9_LOCK_TYPE_UNLCK, P9_LOCK_TYPE_WRLCK};
        const O_RDWR: u32 = 2;
        let a = c.walk_path("/hello.txt").map_err(e("walk lock a"))?;
        let b = c.walk_path("/hello.txt").map_err(e("walk lock b"))?;
        c.open(a, O_RDWR).map_err(e("open lock a"))?;
        c.open(b, O_RDWR).map_err(e("open lock b"))?;
        let st = match c.lock(a, P9_LOCK_TYPE_WRLCK, 0, 10, 0) {
            Err(astraea_libos::errno::Errno::EOPNOTSUPP) => None,
            other => Some(other.map_err(e("lock"))?),
        };
        if let Some(st) = st {
            let (ty, _, _) = c
                .getlock(b, P9_LOCK_TYPE_WRLCK, 0, 10)
                .map_err(e("getlock"))?;
            let other = c
                .lock(b, P9_LOCK_TYPE_WRLCK, 5, 10, 0)
                .map_err(e("lock b"))?;
            c.lock(a, P9_LOCK_TYPE_UNLCK, 0, 10, 0)
                .map_err(e("unlock"))?;
            let (after, _, _) = c
                .getlock(b, P9_LOCK_TYPE_WRLCK, 0, 10)
                .map_err(e("getlock 2"))?;
            println!(
                "locks: taken={} conflict_seen={} second_refused={} free_after_unlock={}",
                st == P9_LOCK_SUCCESS,
                ty == P9_LOCK_TYPE_WRLCK,
                other != P9_LOCK_SUCCESS,
                after == P9_LOCK_TYPE_UNLCK
            );
        } else {
            println!("locks: not supported by this server");
        }
        c.clunk(a);
        c.clunk(b);
    }
    match c.walk_path("/no/such/file") {
        Err(err) => println!("missing file: {err}"),
        Ok(_) => return Err("walk of a missing file succeeded".into()),
    }
    println!("9p ok");
    Ok(())
}

/// Descriptors that point outside guest RAM must be refused by the VMM
/// (an empty reply) without harming the device: a normal request still works.
fn ninep_hostile() -> i32 {
    use astraea_libos::drivers::virtio9p;
    let Some(dev) = virtio9p::device() else {
        println!("no 9P device");
        return 1;
    };
    let mut reply = alloc::vec![0u8; 256];
    let tversion = [
        19u8, 0, 0, 0, 100, 0xff, 0xff, 0, 32, 0, 0, 8, 0, b'9', b'P', b'2', b'0', b'0', b'0',
    ];
    let cases = [
        (
            "request beyond RAM",
            (0x40_0000_0000u64, 19u32),
            (mm::virt_to_phys(reply.as_mut_ptr() as u64), 256u32),
        ),
        (
            "reply beyond RAM",
            (mm::virt_to_phys(tversion.as_ptr() as u64), 19),
            (0x40_0000_0000, 256),
        ),
        (
            "reply in the MMIO hole",
            (mm::virt_to_phys(tversion.as_ptr() as u64), 19),
            (0xd000_0000, 256),
        ),
        (
            "request wrapping the address space",
            (u64::MAX - 4, 19),
            (mm::virt_to_phys(reply.as_mut_ptr() as u64), 256),
        ),
    ];
    for (what, req, rep) in cases {
        match dev.request_raw(req, rep) {
            Err(virtio9p::DeviceError::BadReply) => println!("refused: {what}"),
            other => {
                println!("NOT refused: {what}: {other:?}");
                return 1;
            }
        }
    }
    match astraea_libos::p9::mounted().map(|c| c.getattr(c.root())) {
        Some(Ok(st)) => println!("device still serves: root mode {:o}", st.mode),
        other => {
            println!("device broken after hostile requests: {other:?}");
            return 1;
        }
    }
    0
}

/// Reads `/env/VAR`, writes it and a line read from `/dev/cons` back to
/// `/dev/cons`: the gateway's console is the user's stdin and stdout.
fn ninep_console_env(var: &str) -> i32 {
    use astraea_libos::p9;
    const O_RDONLY: u32 = 0;
    const O_RDWR: u32 = 2;
    let Some(c) = p9::mounted() else {
        println!("no 9P namespace mounted");
        return 1;
    };
    let run = || -> Result<(), astraea_libos::errno::Errno> {
        let env = c.walk_path(&format!("/env/{var}"))?;
        c.open(env, O_RDONLY)?;
        let value = c.read_all(env)?;
        c.clunk(env);
        let cons = c.walk_path("/dev/cons")?;
        c.open(cons, O_RDWR)?;
        let mut line = alloc::vec![0u8; 256];
        let n = c.read(cons, 0, &mut line)?;
        let mut out = Vec::new();
        out.extend_from_slice(b"env: ");
        out.extend_from_slice(&value);
        out.extend_from_slice(b"\necho: ");
        out.extend_from_slice(&line[..n]);
        c.write(cons, 0, &out)?;
        c.clunk(cons);
        Ok(())
    };
    match run() {
        Ok(()) => 0,
        Err(e) => {
            println!("console/env error: {e}");
            1
        }
    }
}

/// 9P round trips as the library OS sees them: `Tgetattr` and 1 KiB `Tread`
/// latencies (median and 90th percentile of `n` each), then 64 KiB reads of
/// the whole of `file` for throughput.
fn ninep_bench(file: &str, n: usize) -> i32 {
    use astraea_libos::p9;
    let Some(c) = p9::mounted() else {
        println!("no 9P namespace mounted");
        return 1;
    };
    let pct = |v: &mut Vec<u64>, p: usize| {
        v.sort_unstable();
        v[(v.len() * p / 100).min(v.len() - 1)]
    };
    let run = || -> Result<(), astraea_libos::errno::Errno> {
        let f = c.walk_path(file)?;
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t = time::monotonic_ns();
            c.getattr(f)?;
            lat.push(time::monotonic_ns() - t);
        }
        println!(
            "getattr_ns_p50={} getattr_ns_p90={}",
            pct(&mut lat, 50),
            pct(&mut lat, 90)
        );
        c.open(f, 0)?;
        let mut buf = alloc::vec![0u8; 64 * 1024];
        lat.clear();
        for i in 0..n {
            let t = time::monotonic_ns();
            c.read(f, (i as u64 % 64) * 1024, &mut buf[..1024])?;
            lat.push(time::monotonic_ns() - t);
        }
        println!(
            "read1k_ns_p50={} read1k_ns_p90={}",
            pct(&mut lat, 50),
            pct(&mut lat, 90)
        );
        let t = time::monotonic_ns();
        let mut total = 0u64;
        loop {
            let got = c.read(f, total, &mut buf)?;
            if got == 0 {
                break;
            }
            total += got as u64;
        }
        let ns = (time::monotonic_ns() - t).max(1);
        println!(
            "read64k_bytes={total} read64k_mib_per_s={}",
            total * 1_000_000_000 / ns / (1 << 20)
        );
        c.clunk(f);
        Ok(())
    };
    match run() {
        Ok(()) => 0,
        Err(e) => {
            println!("9p-bench error: {e}");
            1
        }
    }
}
