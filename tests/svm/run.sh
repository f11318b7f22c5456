#!/usr/bin/env bash
# Standard KVM (AMD SVM) on a machine without it: QEMU with TCG emulates an
# AMD CPU with SVM and nested paging, boots Debian's Linux 6.1, which loads
# kvm_amd — its /dev/kvm is ordinary SVM-based KVM — and runs a command in
# a chroot of this machine's own file system (shared read-only through
# QEMU's virtio-9p server) with one writable directory. Used by
# tests/tests/svm.rs; usable by hand:
#
#   tests/svm/run.sh SCRATCH_DIR COMMAND...
#
# COMMAND runs inside the emulated machine, chrooted into this machine's
# `/`, from SCRATCH_DIR (writable, shared back to this machine). Its exit
# status is written to SCRATCH_DIR/svm-status. The console log goes to
# SCRATCH_DIR/svm-console.log. Knobs: SVM_MEM (QEMU RAM, 6G), SVM_TIMEOUT
# (seconds for the whole run, 1500), SVM_KVM_ARGS (kvm_amd parameters,
# "nested=1 npt=1"), SVM_CACHE (where the Debian kernel is kept,
# target/svm-kernel).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
scratch=$(realpath "$1")
shift
[ $# -gt 0 ] || { echo "usage: $0 SCRATCH_DIR COMMAND..." >&2; exit 2; }
cache=${SVM_CACHE:-$repo/target/svm-kernel}
mkdir -p "$cache"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
[ -x /bin/busybox ] || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
    echo "svm: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 \
        || { apt-get update -qq >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1; } \
        || { echo "svm: cannot install ${need[*]}" >&2; exit 77; }
fi

# Debian's kernel: the emulated machine's Linux, with kvm_amd and 9P.
if [ ! -d "$cache/pkg/boot" ]; then
    (
        cd "$cache"
        if ! ls linux-image-*-amd64_*.deb >/dev/null 2>&1; then
            pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
            [ -n "$pkg" ] || { apt-get update -qq >/dev/null 2>&1; pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-/{print $2; exit}'); }
            apt-get download "$pkg" >/dev/null 2>&1 || { echo "svm: cannot download $pkg" >&2; exit 77; }
        fi
        rm -rf pkg.tmp && mkdir pkg.tmp
        dpkg-deb -x "$(ls linux-image-*-amd64_*.deb | head -1)" pkg.tmp
        mv pkg.tmp pkg
    ) || exit 77
fi
kver=$(ls "$cache/pkg/lib/modules" | head -1)
mods="$cache/pkg/lib/modules/$kver/kernel"

# The initramfs: busybox, the modules (in dependency order: each one's
# `depends=` names only modules before it), and an init that loads kvm_amd,
# mounts this machine's files and runs the command in a chroot.
root=$(mktemp -d)
qemu=
trap 'rm -rf "$root"; [ -z "$qemu" ] || kill -KILL "$qemu" 2>/dev/null || true' EXIT
mkdir -p "$root"/{bin,proc,sys,dev,tmp,host,mods}
cp /bin/busybox "$root/bin/busybox"
order=(
    virt/lib/irqbypass arch/x86/kvm/kvm drivers/crypto/ccp/ccp arch/x86/kvm/kvm-amd
    drivers/virtio/virtio_ring drivers/virtio/virtio drivers/virtio/virtio_pci_modern_dev
    drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci
    fs/netfs/netfs fs/fscache/fscache net/9p/9pnet net/9p/9pnet_virtio fs/9p/9p
)
i=0
for m in "${order[@]}"; do
    f="$mods/$m.ko"
    [ -f "$f" ] || f="$f.xz"
    [ -f "$f" ] || continue
    i=$((i + 1))
    case "$f" in
        *.xz) xz -dc "$f" > "$root/mods/$(printf %02d $i)-$(basename "$m").ko" ;;
        *) cp "$f" "$root/mods/$(printf %02d $i)-$(basename "$m").ko" ;;
    esac
done
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in /mods/*.ko; do
    case "\$m" in
        *kvm-amd.ko) insmod "\$m" ${SVM_KVM_ARGS:-nested=1 npt=1} ;;
        *) insmod "\$m" ;;
    esac || echo "svm: insmod \$m failed"
done
echo "svm: guest up, \$(uname -r), /dev/kvm: \$(ls /dev/kvm 2>&1)"
# Loopback for the socket programs (their partitions reach the guest's network).
ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up || echo "svm: no loopback"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /host \
    || echo "svm: cannot mount the host's files"
mount -t devtmpfs dev /host/dev
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
# A writable /tmp; a checkout under /tmp stays visible through it.
mkdir -p /hosttmp
mount -o bind /host/tmp /hosttmp
mount -t tmpfs tmp /host/tmp
case "$repo/" in
    /tmp/*) mkdir -p "/host$repo" && mount -o bind "/hosttmp${repo#/tmp}" "/host$repo" \
        || echo "svm: cannot show the checkout at $repo" ;;
esac
mkdir -p "/host$scratch" 2>/dev/null
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 scratch "/host$scratch" \
    || echo "svm: cannot mount the scratch directory"
chroot /host /bin/sh -c 'cd "$scratch" && sh ./svm-command-run; echo \$? > "$scratch/svm-status"'
sync
echo "svm: done"
poweroff -f
EOF
chmod +x "$root/init"
# The command file: the arguments as one shell command line.
{
    printf 'exec'
    for a in "$@"; do printf ' %q' "$a"; done
    printf '\n'
} > "$scratch/svm-command-run"
rm -f "$scratch/svm-status"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$scratch/svm-initrd.gz"

# QEMU's monitor on a socket in the scratch directory, for watchdog.py:
# it kicks QEMU when its TCG loses an interrupt (see there) and, when the
# run overstays SVM_TIMEOUT, writes the emulated CPU's state and the guest
# kernel's backtraces (an NMI: unknown_nmi_panic, panic_print) to the
# console log before stopping QEMU: a hang leaves a diagnosis.
monitor="$scratch/svm-monitor.sock"
rm -f "$monitor"
# Appended to, by QEMU and the watchdog both.
: > "$scratch/svm-console.log"
set +e
qemu-system-x86_64 -accel tcg -cpu EPYC,+svm \
    -m "${SVM_MEM:-6G}" -smp 1 -kernel "$cache/pkg/boot/vmlinuz-$kver" -initrd "$scratch/svm-initrd.gz" \
    -append "console=ttyS0 panic=-1 loglevel=4 quiet unknown_nmi_panic panic_print=0x5" \
    -fsdev local,id=hostfs,path=/,security_model=none,readonly=on \
    -device virtio-9p-pci,fsdev=hostfs,mount_tag=host \
    -fsdev "local,id=scratchfs,path=$scratch,security_model=none" \
    -device virtio-9p-pci,fsdev=scratchfs,mount_tag=scratch \
    -nographic -no-reboot -monitor "unix:$monitor,server,nowait" -serial stdio \
    </dev/null >> "$scratch/svm-console.log" 2>&1 &
qemu=$!
if command -v python3 >/dev/null; then
    python3 "$here/watchdog.py" "$monitor" "$scratch/svm-console.log" "${SVM_TIMEOUT:-1500}" "$qemu" &
else
    echo "svm: python3 is missing: no watchdog, only a timeout" >&2
    (sleep "${SVM_TIMEOUT:-1500}"; kill -KILL "$qemu" 2>/dev/null) &
fi
watchdog=$!
wait "$qemu"
qrc=$?
kill "$watchdog" 2>/dev/null
wait "$watchdog" 2>/dev/null
set -e
rm -f "$scratch/svm-initrd.gz"
if [ ! -f "$scratch/svm-status" ]; then
    echo "svm: the emulated machine did not finish the command (qemu exit $qrc); console:" >&2
    tail -40 "$scratch/svm-console.log" >&2
    exit 3
fi
exit "$(cat "$scratch/svm-status")"
