#!/bin/sh
# What tests/tests/svm.rs runs on standard KVM (inside tests/svm/run.sh's
# emulated SVM machine), from the scratch directory the test prepared: each
# case NAME leaves NAME.out, NAME.err and NAME.rc there for the test to
# compare with the host's.
#
#   suite.sh REPO [JDK_HOME...]
repo=$1
shift
astraea="$repo/target/release/astraea"
kdir="$repo/target/x86_64-unknown-none/release"
export ASTRAEA_KERNEL="$kdir/astraea-kernel"
# Each case gets SVM_CASE_TIMEOUT seconds (emulation runs about 20x slower
# than this machine): a hang then fails that case alone, with status 124
# and a line in its .err, instead of the whole emulated run.
case_timeout=${SVM_CASE_TIMEOUT:-600}
case_() {
    name=$1
    shift
    echo "svm: $name: $*" >&2
    timeout -k 15 "$case_timeout" "$@" > "$name.out" 2> "$name.err"
    rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        echo "svm: $name: no answer in $case_timeout s: stopped (status $rc)" | tee -a "$name.err" >&2
    fi
    echo "$rc" > "$name.rc"
}
case_ hostkind "$astraea" run --log info --kernel "$kdir/astraea-kernel" -- /bin/busybox echo hello-from-svm
case_ ktest "$astraea" run --kernel "$kdir/astraea-ktest"
case_ torture-static "$astraea" run -- ./torture-static 3 12
case_ torture-dynamic "$astraea" run -- ./torture-dynamic 3 12
case_ files "$astraea" run -- ./files-static "$PWD/files-data"
case_ mmap "$astraea" run -- ./mmap-static "$PWD/mmap-data"
case_ kread "$astraea" run -- ./kread-static
# Direct system-call entry needs a PVM host: here it must fall back to trap,
# say so, and keep library-OS memory out of the program's reach.
case_ kread-direct "$astraea" run --syscall-entry direct --log warn -- ./kread-static
# TCP sockets through the gateway's /net (the emulated machine's loopback).
case_ sockets "$astraea" run -- ./sockets-static
# A SIGTERM sent to astraea run reaches the program (host_signals.rs: an MSI
# to the guest, which reads the pending set from a port).
echo "svm: hostsig" >&2
"$astraea" run -- /bin/busybox sleep 120 > hostsig.out 2> hostsig.err &
hostsig=$!
sleep 8
kill -TERM "$hostsig"
wait "$hostsig"
echo $? > hostsig.rc
for p in sigsegv sigfpe threads timers; do
    case_ "$p" "$astraea" run -- "./$p-static"
done
# A snapshot taken on standard KVM and restored there (the vCPU's TSC set
# to go on from the snapshot's).
mkdir -p snapshot-data
printf '0123456789abcdef' > snapshot-data/ro
case_ snapshot-taken "$astraea" run --snapshot "$PWD/svm.snap" -- ./snapshot-dynamic "$PWD/snapshot-data"
case_ snapshot-restored "$astraea" run --log debug --from "$PWD/svm.snap"
# Again: the first restore recorded its working set (svm.snap.ws), which
# this one populates ahead of the vCPU.
case_ snapshot-restored-again "$astraea" run --from "$PWD/svm.snap"
[ -s svm.snap.ws ] && echo yes > snapshot-ws.recorded
rm -f svm.snap svm.snap.ws
# Sockets across a snapshot: the reads and the accept waiting at the
# gateway are interrupted and posted again; the restored copy's listener
# listens again, published at a port of its own, and its connection ended.
case_ snapshot-net-taken "$astraea" run --snapshot "$PWD/net.snap" -- ./snapshot-dynamic net 47321
case_ snapshot-net-restored "$astraea" run --from "$PWD/net.snap" --publish 47321=0
rm -f net.snap
# Random-sequence differs and programs of fixed output (differs.list:
# "CASE PROGRAM ARGS..."), compared by the test with the host's output.
# They run under the host's descriptor limits (differs.nofile: soft hard).
if [ -f differs.list ]; then
    (
        read -r soft hard < differs.nofile
        ulimit -Hn "$hard" && ulimit -Sn "$soft" || echo "svm: cannot set the descriptor limits $soft $hard" >&2
        while read -r name prog args; do
            # shellcheck disable=SC2086 # ARGS are words
            case_ "$name" "$astraea" run -- "$prog" $args < /dev/null
        done < differs.list
    )
fi
for home in "$@"; do
    v=$(basename "$home")
    case_ "java-version-$v" "$astraea" run --mem 1G -- "$home/bin/java" -version
    case_ "jitchurn-$v" "$astraea" run --mem 1G -- "$home/bin/java" -cp . JitChurn 3
done
# The same image under another VMM: QEMU (on this standard KVM) through the
# PVH entry, files from QEMU's own virtio-9p server.
echo "svm: qemu-pvh" >&2
sh "$repo/tests/svm/qemu-pvh.sh" "$kdir/astraea-kernel"
