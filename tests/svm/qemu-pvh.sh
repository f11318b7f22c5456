#!/bin/sh
# Boots the kernel image under QEMU (KVM, the `microvm` machine) through its
# PVH entry, with its files from QEMU's own virtio-9p server, and runs a
# static program that reads a file. Run from a scratch directory on a
# machine with /dev/kvm that is standard KVM (QEMU cannot start PVM guests);
# a random-number device sits beside the 9P one (the kernel must pick 9P):
# tests/svm/suite.sh runs it inside the emulated SVM host. Leaves
# qemu-pvh.out (the serial console) and qemu-pvh.rc (QEMU's exit status:
# isa-debug-exit makes it 2 * status + 1).
#
#   qemu-pvh.sh KERNEL
kernel=$1
rm -rf qemu-root
mkdir -p qemu-root/bin
cp /bin/busybox qemu-root/bin/busybox
echo "read through QEMU's 9P server" > qemu-root/greeting.txt
timeout 300 qemu-system-x86_64 -accel kvm -M microvm,acpi=off,rtc=on -cpu host -m 256M \
    -nodefaults -nographic -no-reboot -monitor none -serial file:qemu-pvh.out \
    -device isa-debug-exit,iobase=0xf4,iosize=4 \
    -global virtio-mmio.force-legacy=false \
    -fsdev "local,id=root,path=$PWD/qemu-root,security_model=none,readonly=on" \
    -device virtio-rng-device \
    -device virtio-9p-device,fsdev=root,mount_tag=root \
    -kernel "$kernel" \
    -append "log=${QEMU_PVH_LOG:-warn} -- /bin/busybox cat /greeting.txt" </dev/null 2> qemu-pvh.err
echo $? > qemu-pvh.rc
