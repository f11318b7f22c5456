//! Clock ids as Linux sorts them (`clockid_to_kclock`): what each system
//! call taking a clock may do with it, and the CPU-time clocks' readings.
//! A negative id is `(~pid << 3) | thread << 2 | which`: a CPU-time clock
//! of a process or thread (`which` 0 profiling, 1 user time, 2 run time;
//! 3 is invalid), or with `which` 3 and no thread bit a POSIX dynamic
//! clock (a PTP device's descriptor, which a partition never has).

use crate::errno::Errno;

/// A CPU-time clock: whose, and which time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuClock {
    /// A thread's (else the process's).
    pub thread: bool,
    /// The thread or process id; 0 for the caller's.
    pub id: u64,
    /// 0: user + system (`CPUCLOCK_PROF`), 1: user (`CPUCLOCK_VIRT`), 2:
    /// run time (`CPUCLOCK_SCHED`), 3: invalid.
    pub which: u32,
}

/// What a CPU-time clock measures, once checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuTarget {
    /// The process's time; user time only when `user_only`.
    Process { user_only: bool },
    /// One thread's run time.
    Thread(u64),
}

/// A clock id Linux knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Realtime,
    Monotonic,
    Boottime,
    Tai,
    /// `CLOCK_MONOTONIC_RAW`: read only (no timers, no sleeping).
    Raw,
    /// `CLOCK_*_COARSE`: read only, at the tick's resolution.
    Coarse,
    /// `CLOCK_REALTIME_ALARM` (`true`) and `CLOCK_BOOTTIME_ALARM`: they
    /// work only where the host has a real-time clock device.
    Alarm(bool),
    Cpu(CpuClock),
    /// A POSIX dynamic clock (`FD_TO_CLOCKID`).
    Dynamic,
}

impl Clock {
    /// The clock `id` names; `EINVAL` for an id Linux has no clock for.
    pub fn of(id: u64) -> Result<Clock, Errno> {
        let id = id as u32 as i32;
        Ok(match id {
            0 => Clock::Realtime,
            1 => Clock::Monotonic,
            2 => Clock::Cpu(CpuClock {
                thread: false,
                id: 0,
                which: 2,
            }),
            3 => Clock::Cpu(CpuClock {
                thread: true,
                id: 0,
                which: 2,
            }),
            4 => Clock::Raw,
            5 | 6 => Clock::Coarse,
            7 => Clock::Boottime,
            8 => Clock::Alarm(true),
            9 => Clock::Alarm(false),
            11 => Clock::Tai,
            i if i < 0 && i & 7 == 3 => Clock::Dynamic,
            i if i < 0 => Clock::Cpu(CpuClock {
                thread: i & 4 != 0,
                id: u64::from(!(i >> 3) as u32),
                which: (i & 3) as u32,
            }),
            _ => return Err(Errno::EINVAL),
        })
    }

    /// Whether it counts wall-clock time (absolute times are Unix times).
    pub fn wall(self) -> bool {
        matches!(self, Clock::Realtime | Clock::Tai | Clock::Alarm(true))
    }

    /// Whether the alarm clock is there (Linux refuses it without a
    /// real-time clock device); other clocks always are.
    pub fn present(self) -> bool {
        !matches!(self, Clock::Alarm(_)) || crate::time::alarm_clocks()
    }

    /// The resolution `clock_getres` reports, in ns.
    pub fn resolution(self) -> Result<u64, Errno> {
        match self {
            Clock::Coarse => Ok(crate::time::coarse_res_ns()),
            Clock::Alarm(_) if !self.present() => Err(Errno::EINVAL),
            Clock::Dynamic => Err(Errno::EINVAL),
            Clock::Cpu(c) => c.target().map(|_| 1),
            _ => Ok(1),
        }
    }

    /// The clock's reading in ns.
    pub fn read(self) -> Result<u64, Errno> {
        match self {
            Clock::Realtime | Clock::Tai => Ok(crate::time::realtime_ns()),
            Clock::Alarm(_) if !self.present() => Err(Errno::EINVAL),
            Clock::Alarm(true) => Ok(crate::time::realtime_ns()),
            Clock::Dynamic => Err(Errno::EINVAL),
            Clock::Cpu(c) => c.target().and_then(CpuTarget::read),
            _ => Ok(crate::time::monotonic_ns()),
        }
    }
}

impl CpuClock {
    /// What the clock measures: `EINVAL` for an invalid `which` or a
    /// process or thread that is not the caller's.
    pub fn target(self) -> Result<CpuTarget, Errno> {
        if self.which == 3 {
            return Err(Errno::EINVAL);
        }
        if self.thread {
            let tid = if self.id == 0 {
                crate::sched::current().id()
            } else {
                crate::process::thread(self.id).ok_or(Errno::EINVAL)?;
                self.id
            };
            return Ok(CpuTarget::Thread(tid));
        }
        if self.id != 0 && self.id != crate::process::pid() {
            return Err(Errno::EINVAL);
        }
        Ok(CpuTarget::Process {
            user_only: self.which == 1,
        })
    }
}

impl CpuTarget {
    /// The CPU time so far in ns; `EINVAL` for a thread that has exited.
    pub fn read(self) -> Result<u64, Errno> {
        match self {
            CpuTarget::Process { user_only } => {
                let (user, sys) = crate::syscall::rusage::cpu_ns();
                Ok(if user_only { user } else { user + sys })
            }
            CpuTarget::Thread(tid) => {
                if tid == crate::sched::current().id() {
                    return Ok(crate::sched::cpu_ns(&crate::sched::current()));
                }
                let t = crate::process::thread(tid).ok_or(Errno::EINVAL)?;
                Ok(crate::sched::cpu_ns(&t))
            }
        }
    }
}
