/* The PVH entry (Xen's XEN_ELFNOTE_PHYS32_ENTRY): how QEMU (-kernel),
 * Firecracker, Cloud Hypervisor and Xen start the image. They load the
 * segments at their physical addresses (libos/kernel.ld puts them at
 * KERNEL_START) and jump here in 32-bit protected mode, paging off, with the
 * physical address of a `struct hvm_start_info` in %ebx and no stack.
 *
 * This code maps the first 4 GiB twice (identity, and at the direct map
 * where the kernel runs), enables long mode and the FPU state the program's
 * SSE/AVX instructions need, applies the image's relative relocations for
 * the direct map (our own VMM does that with hermit-entry's loader), and
 * calls __astraea_pvh_main(start_info_pa) on a stack in the image.
 * Included by `astraea_libos::entry!` (AT&T syntax). */

    .pushsection .note.Xen, "a", @note
    .balign 4
    .long 4                         /* name size: "Xen\0" */
    .long 4                         /* descriptor size */
    .long 18                        /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .balign 4
    .long __astraea_pvh_start32_pa  /* absolute: libos/kernel.ld */
    .popsection

    .pushsection .text.pvh, "ax"
    .code32
    .globl astraea_pvh_start32
astraea_pvh_start32:
    cli
    cld
    movl %ebx, %edi                 /* start_info, kept for the Rust side */
    movl $__astraea_pvh_start32_pa, %ebp

    /* PML4[0] and PML4[0x101] (the direct map) -> the PDPT */
    leal (pvh_pdpt - astraea_pvh_start32)(%ebp), %eax
    orl $3, %eax
    movl %eax, (pvh_pml4 - astraea_pvh_start32)(%ebp)
    movl %eax, (pvh_pml4 - astraea_pvh_start32 + 0x101 * 8)(%ebp)
    /* PDPT[0..4] -> four page directories */
    leal (pvh_pdpt - astraea_pvh_start32)(%ebp), %esi
    leal (pvh_pd - astraea_pvh_start32)(%ebp), %eax
    orl $3, %eax
    xorl %ecx, %ecx
1:  movl %eax, (%esi,%ecx,8)
    addl $4096, %eax
    incl %ecx
    cmpl $4, %ecx
    jb 1b
    /* 2048 2 MiB pages: present, writable */
    leal (pvh_pd - astraea_pvh_start32)(%ebp), %esi
    movl $0x83, %eax
    xorl %ecx, %ecx
2:  movl %eax, (%esi,%ecx,8)
    addl $0x200000, %eax
    incl %ecx
    cmpl $2048, %ecx
    jb 2b

    /* CR4: PAE, OSFXSR, OSXMMEXCPT, and OSXSAVE where XSAVE exists */
    movl $1, %eax
    cpuid
    movl %ecx, %esi
    movl %cr4, %eax
    orl $((1 << 5) | (1 << 9) | (1 << 10)), %eax
    testl $(1 << 26), %esi
    jz 3f
    orl $(1 << 18), %eax
3:  movl %eax, %cr4
    /* XCR0: x87, SSE, AVX and AVX-512 state, as far as the CPU has them */
    testl $(1 << 26), %esi
    jz 4f
    movl $0xd, %eax
    xorl %ecx, %ecx
    cpuid
    andl $0xe7, %eax
    orl $3, %eax
    xorl %edx, %edx
    xorl %ecx, %ecx
    xsetbv
4:
    /* EFER: long mode, syscall/sysret, and no-execute where it exists
     * (what our VMM sets, hypervisor/src/vcpu.rs) */
    movl $0x80000001, %eax
    cpuid
    movl %edx, %esi
    movl $0xc0000080, %ecx
    rdmsr
    orl $((1 << 8) | 1), %eax
    testl $(1 << 20), %esi
    jz 5f
    orl $(1 << 11), %eax
5:  wrmsr

    leal (pvh_pml4 - astraea_pvh_start32)(%ebp), %eax
    movl %eax, %cr3
    leal (pvh_gdt - astraea_pvh_start32)(%ebp), %eax
    movl %eax, (pvh_gdtr - astraea_pvh_start32 + 2)(%ebp)
    lgdt (pvh_gdtr - astraea_pvh_start32)(%ebp)
    /* CR0: paging, write protect, numeric errors, monitor coprocessor; no
     * emulation, no task switched */
    movl %cr0, %eax
    andl $~((1 << 2) | (1 << 3)), %eax
    orl $((1 << 31) | (1 << 16) | (1 << 5) | (1 << 1) | 1), %eax
    movl %eax, %cr0
    leal (pvh_start64 - astraea_pvh_start32)(%ebp), %eax
    movl %eax, (pvh_farptr - astraea_pvh_start32)(%ebp)
    ljmp *(pvh_farptr - astraea_pvh_start32)(%ebp)

    .code64
pvh_start64:
    movl $0x10, %eax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    xorl %eax, %eax
    movw %ax, %fs
    movw %ax, %gs
    /* %rbx: where the image is (linked at 0); %r12: where it will run */
    leaq __ehdr_start(%rip), %rbx
    movabsq ${DIRECT_MAP}, %r12
    addq %rbx, %r12
    /* DT_RELA and DT_RELASZ from the dynamic section */
    leaq _DYNAMIC(%rip), %rsi
    xorl %r8d, %r8d
    xorl %r9d, %r9d
6:  movq (%rsi), %rax
    testq %rax, %rax
    jz 8f
    cmpq $7, %rax
    jne 7f
    movq 8(%rsi), %r8
7:  cmpq $8, %rax
    jne 71f
    movq 8(%rsi), %r9
71: addq $16, %rsi
    jmp 6b
8:  testq %r8, %r8
    jz 10f
    addq %rbx, %r8
    addq %r8, %r9
9:  cmpq %r9, %r8
    jae 10f
    cmpl $8, 8(%r8)                 /* R_X86_64_RELATIVE: nothing else occurs */
    jne 99f
    movq (%r8), %rcx
    movq 16(%r8), %rdx
    addq %r12, %rdx
    movq %rdx, (%rbx,%rcx)
    addq $24, %r8
    jmp 9b
99: ud2
10: leaq pvh_high(%rip), %rax
    movabsq ${DIRECT_MAP}, %rcx
    addq %rcx, %rax
    jmp *%rax
pvh_high:
    leaq __astraea_pvh_stack_top(%rip), %rsp
    movl %edi, %edi
    call __astraea_pvh_main
    ud2

    .balign 8
pvh_gdt:
    .quad 0
    .quad 0x00af9b000000ffff        /* 0x08: 64-bit code */
    .quad 0x00cf93000000ffff        /* 0x10: data */
pvh_gdtr:
    .word 3 * 8 - 1
    .long 0
pvh_farptr:
    .long 0
    .word 0x08

    .balign 4096
pvh_pml4:
    .fill 4096, 1, 0
pvh_pdpt:
    .fill 4096, 1, 0
pvh_pd:
    .fill 4 * 4096, 1, 0
    .popsection

    .pushsection .bss.pvh_stack, "aw", @nobits
    .balign 16
    .skip 256 * 1024
__astraea_pvh_stack_top:
    .popsection
