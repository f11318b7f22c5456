#!/usr/bin/env python3
"""Watches the emulated SVM machine of tests/svm/run.sh through QEMU's monitor.

    watchdog.py MONITOR_SOCKET CONSOLE_LOG TIMEOUT_SECONDS QEMU_PID

Two jobs:

* QEMU 7.2's TCG (Debian 12's) can lose a local-APIC interrupt: the emulated
  CPU halts with interrupts enabled, not in an interrupt shadow, a deliverable
  vector in the APIC's IRR (above the processor priority, nothing in
  service), and never takes it -- the machine's clock stops and the run
  hangs until killed. Seen under load with the partition halted in KVM_RUN
  waiting for its timer (the machine's Linux idle in `native_safe_halt`).
  Any new APIC event makes QEMU look at the IRR again, so when two samples
  a few seconds apart show that state, the watchdog sends a key press (IRQ 1,
  which nothing in the machine reads) and writes a line to the console log.
  A hang of the partition itself is not this state (the machine's own timers
  still run and the suite's per-case timeout fires).
* When the run overstays TIMEOUT_SECONDS: the CPU's state (registers, local
  APIC, the code at RIP) goes to the console log, then an NMI, which the
  machine's kernel (`unknown_nmi_panic panic_print=...`) answers with a
  backtrace and every task's stack, then QEMU is killed.
"""
import os
import re
import signal
import socket
import sys
import time

ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Monitor:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.s.settimeout(0.2)
        self.drain()

    def drain(self):
        out = b""
        while True:
            try:
                b = self.s.recv(65536)
            except socket.timeout:
                return out
            if not b:
                raise EOFError
            out += b

    def ask(self, *cmds, wait=0.3):
        text = b""
        for c in cmds:
            self.s.sendall(c.encode() + b"\n")
            time.sleep(wait)
            text += self.drain()
        text = ESC.sub("", text.decode(errors="replace"))
        return "\n".join(l for l in text.splitlines() if not l.startswith("(qemu)"))


def vectors(line):
    return [int(v) for v in line.split()[1:] if v.isdigit()]


def lost_interrupt(state):
    """The CPU halted, able to take an interrupt, one deliverable in the IRR."""
    regs = re.search(r"RFL=([0-9a-f]+) .* II=(\d) .* HLT=(\d)", state)
    ppr = re.search(r"PPR 0x([0-9a-f]+)", state)
    irr = isr = None
    for line in state.splitlines():
        if line.startswith("IRR"):
            irr = vectors(line)
        elif line.startswith("ISR"):
            isr = vectors(line)
    if not regs or not ppr or irr is None or isr is None:
        return None
    rfl, ii, hlt = int(regs.group(1), 16), regs.group(2), regs.group(3)
    if hlt != "1" or ii != "0" or not rfl & 0x200 or isr or not irr:
        return None
    top = max(irr)
    if top & 0xF0 <= int(ppr.group(1), 16) & 0xF0:
        return None
    return top


def main():
    path, log, timeout, qemu = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    deadline = time.monotonic() + timeout

    def say(text):
        with open(log, "a") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def alive():
        try:
            os.kill(qemu, 0)
            return True
        except OSError:
            return False

    mon = None
    for _ in range(100):
        try:
            mon = Monitor(path)
            break
        except (OSError, EOFError):
            if not alive():
                return
            time.sleep(0.1)
    if mon is None:
        say("svm: watchdog: QEMU's monitor did not answer; no watchdog")
        return
    suspect = None
    kicks = 0
    try:
        while alive():
            if time.monotonic() >= deadline:
                say(f"svm: QEMU overstayed {timeout} s; its state:")
                say(mon.ask("info status", "info registers", "info lapic", "x/16i $pc"))
                say("svm: sending an NMI for the guest kernel's backtrace and tasks")
                mon.ask("nmi")
                time.sleep(20)
                os.kill(qemu, signal.SIGKILL)
                return
            time.sleep(3)
            vec = lost_interrupt(mon.ask("info registers", "info lapic", wait=0.2))
            if vec is not None and vec == suspect:
                kicks += 1
                say(
                    f"svm: watchdog: QEMU lost an interrupt (vector {vec} pending, "
                    f"CPU halted with interrupts on); kick {kicks}: a key press"
                )
                mon.ask("sendkey shift")
                suspect = None
            else:
                suspect = vec
    except (OSError, EOFError):
        return


if __name__ == "__main__":
    main()
