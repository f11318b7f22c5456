/* Astraea's vDSO: time without a system call. The kernel maps this image
 * one page above the resume stub ([vdso], see arch/x86_64/user.rs) and
 * fills three words of the stub's page (the "vvar"), 0x800 bytes below
 * the image: the TSC at boot, ns-per-tick * 2^32, the Unix time at boot
 * in ns. Other clocks fall back to the system call.
 *
 * Rebuild with `./x vdso` (gcc); libos/vdso/vdso.so is what the kernel
 * embeds, and a test checks that it matches this source. */
	.intel_syntax noprefix
	.text

/* rax = nanoseconds since boot (clobbers rdx, rcx) */
	.type monotonic_ns, @function
monotonic_ns:
	lfence
	rdtsc
	shl rdx, 32
	or rax, rdx
	sub rax, [rip + vvar_tsc0]
	mul qword ptr [rip + vvar_mult]
	shrd rax, rdx, 32
	ret
	.size monotonic_ns, .-monotonic_ns

/* int clock_gettime(clockid_t clk, struct timespec *ts) */
	.globl __vdso_clock_gettime
	.type __vdso_clock_gettime, @function
__vdso_clock_gettime:
	cmp edi, 7		/* BOOTTIME */
	je 1f
	cmp edi, 6		/* MONOTONIC_COARSE */
	ja 9f
	cmp edi, 2		/* PROCESS_CPUTIME, THREAD_CPUTIME: the kernel's */
	je 9f
	cmp edi, 3
	je 9f
1:	mov r8, rsi
	call monotonic_ns
	cmp edi, 0		/* REALTIME */
	je 2f
	cmp edi, 5		/* REALTIME_COARSE */
	jne 3f
2:	add rax, [rip + vvar_boot]
3:	xor edx, edx
	mov ecx, 1000000000
	div rcx
	mov [r8], rax
	mov [r8 + 8], rdx
	xor eax, eax
	ret
9:	mov eax, 228		/* SYS_clock_gettime */
	syscall
	ret
	.size __vdso_clock_gettime, .-__vdso_clock_gettime

/* int gettimeofday(struct timeval *tv, struct timezone *tz) */
	.globl __vdso_gettimeofday
	.type __vdso_gettimeofday, @function
__vdso_gettimeofday:
	test rdi, rdi
	jz 1f
	call monotonic_ns
	add rax, [rip + vvar_boot]
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	mov [rdi], rax
	mov rax, rdx
	xor edx, edx
	mov ecx, 1000
	div rcx
	mov [rdi + 8], rax
1:	test rsi, rsi
	jz 2f
	mov qword ptr [rsi], 0
2:	xor eax, eax
	ret
	.size __vdso_gettimeofday, .-__vdso_gettimeofday

/* time_t time(time_t *t) */
	.globl __vdso_time
	.type __vdso_time, @function
__vdso_time:
	call monotonic_ns
	add rax, [rip + vvar_boot]
	xor edx, edx
	mov ecx, 1000000000
	div rcx
	test rdi, rdi
	jz 1f
	mov [rdi], rax
1:	ret
	.size __vdso_time, .-__vdso_time

/* int getcpu(unsigned *cpu, unsigned *node, void *cache): one CPU today */
	.globl __vdso_getcpu
	.type __vdso_getcpu, @function
__vdso_getcpu:
	test rdi, rdi
	jz 1f
	mov dword ptr [rdi], 0
1:	test rsi, rsi
	jz 2f
	mov dword ptr [rsi], 0
2:	xor eax, eax
	ret
	.size __vdso_getcpu, .-__vdso_getcpu

/* int clock_getres(clockid_t, struct timespec *): the kernel's answer */
	.globl __vdso_clock_getres
	.type __vdso_clock_getres, @function
__vdso_clock_getres:
	mov eax, 229
	syscall
	ret
	.size __vdso_clock_getres, .-__vdso_clock_getres

	.weak clock_gettime, gettimeofday, time, getcpu, clock_getres
	.set clock_gettime, __vdso_clock_gettime
	.set gettimeofday, __vdso_gettimeofday
	.set time, __vdso_time
	.set getcpu, __vdso_getcpu
	.set clock_getres, __vdso_clock_getres

	.section .note.GNU-stack, "", @progbits
