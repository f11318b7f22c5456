//! Checked, zero-copy views of an ELF64 x86-64 executable and the
//! page-granular plan for loading it.
//!
//! The bytes come from the file system and are untrusted. As in the 9P codec
//! (`astraea_9p::wire`), every read is bounds-checked and every sum is
//! checked, so no input can panic, read out of bounds or overflow.
//! [`Elf::parse`] checks only what every accessor relies on (the header, the
//! program header table and `PT_INTERP`, which decides the loader);
//! [`Elf::load_plan`] checks the segments, because only loading needs them.

use alloc::vec::Vec;
use core::fmt;

use crate::errno::Errno;

/// The page size the plan rounds to (x86-64 base pages).
pub const PAGE_SIZE: u64 = 4096;
/// Size of the ELF64 file header.
pub const EHDR_SIZE: usize = 64;
/// Size of one ELF64 program header (`e_phentsize`).
pub const PHDR_SIZE: usize = 56;
/// Most program headers accepted. Real executables have about a dozen; the
/// cap keeps the table walk (done per query) trivially cheap.
pub const MAX_PHNUM: u16 = 128;
/// Longest `PT_INTERP` accepted, NUL included (Linux's `PATH_MAX`).
pub const MAX_INTERP_LEN: u64 = 4096;
/// Largest distance from the lowest to the highest mapped page. Far beyond
/// any real executable, yet small enough that a hostile file cannot ask for
/// a mapping that would eat the address space.
pub const MAX_SPAN: u64 = 1 << 40;

/// `e_machine` for x86-64.
pub const EM_X86_64: u16 = 62;
/// `e_type`: an executable linked at a fixed address.
pub const ET_EXEC: u16 = 2;
/// `e_type`: a position-independent executable (or a shared object such as `ld.so`).
pub const ET_DYN: u16 = 3;

/// Unused program header.
pub const PT_NULL: u32 = 0;
/// Loadable segment.
pub const PT_LOAD: u32 = 1;
/// Dynamic linking information.
pub const PT_DYNAMIC: u32 = 2;
/// Path of the program interpreter (the dynamic linker).
pub const PT_INTERP: u32 = 3;
/// Auxiliary notes.
pub const PT_NOTE: u32 = 4;
/// The program header table itself, as mapped in memory.
pub const PT_PHDR: u32 = 6;
/// Thread-local storage template.
pub const PT_TLS: u32 = 7;
/// `.eh_frame_hdr` location.
pub const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
/// Stack permissions (only the `X` flag matters).
pub const PT_GNU_STACK: u32 = 0x6474_e551;
/// Range to make read-only after relocation.
pub const PT_GNU_RELRO: u32 = 0x6474_e552;
/// GNU property notes (CET, ISA level).
pub const PT_GNU_PROPERTY: u32 = 0x6474_e553;

const ELFMAG: [u8; 4] = *b"\x7fELF";
const ELFCLASS64: u8 = 2;
const ELFDATA2LSB: u8 = 1;
const EV_CURRENT: u8 = 1;

// ---------------------------------------------------------------------------
// Errors

/// Why an executable was refused. All but [`ElfError::MisalignedBase`] mean
/// the file is malformed or not for this machine (`ENOEXEC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfError {
    /// Shorter than the 64-byte ELF header.
    Truncated,
    /// Does not start with `\x7fELF`.
    BadMagic,
    /// Not `ELFCLASS64`.
    NotElf64,
    /// Not little-endian.
    NotLittleEndian,
    /// `EI_VERSION` or `e_version` is not `EV_CURRENT`.
    BadVersion,
    /// `e_machine` is not x86-64.
    WrongMachine(u16),
    /// `e_type` is neither `ET_EXEC` nor `ET_DYN`.
    WrongType(u16),
    /// `e_phentsize` is not 56.
    BadPhentsize(u16),
    /// More than [`MAX_PHNUM`] program headers.
    TooManyPhdrs(u16),
    /// The program header table does not lie inside the file.
    PhdrsOutOfBounds,
    /// `PT_INTERP` does not lie inside the file.
    InterpOutOfBounds,
    /// `PT_INTERP` does not end in NUL, or the path before the NUL is empty.
    InterpNotTerminated,
    /// `PT_INTERP` is longer than [`MAX_INTERP_LEN`].
    InterpTooLong,
    /// The interpreter path is not UTF-8.
    InterpNotUtf8,
    /// A segment's `p_filesz` exceeds its `p_memsz`.
    FileszExceedsMemsz,
    /// A segment's `p_offset` and `p_vaddr` disagree modulo the page size or
    /// modulo `p_align`, or `p_align` is not a power of two.
    Misaligned,
    /// An address or size computation overflows 64 bits.
    Overflow,
    /// A segment's file bytes lie (partly) past the end of the file.
    SegmentOutOfFile,
    /// `PT_LOAD` segments are not in ascending address order, or two of them
    /// share a page.
    Overlap,
    /// The mapped pages span more than [`MAX_SPAN`].
    SpanTooLarge,
    /// There is no non-empty `PT_LOAD` segment.
    NoLoadSegments,
    /// The base given for a position-independent executable is not page-aligned.
    MisalignedBase,
}

impl ElfError {
    /// The errno `execve` reports: `ENOEXEC` for a bad file (like Linux),
    /// `EINVAL` for a bad base, which is the loader's own mistake.
    pub const fn errno(&self) -> Errno {
        match self {
            ElfError::MisalignedBase => Errno::EINVAL,
            _ => Errno::ENOEXEC,
        }
    }
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::Truncated => f.write_str("ELF file shorter than its header"),
            ElfError::BadMagic => f.write_str("not an ELF file"),
            ElfError::NotElf64 => f.write_str("not a 64-bit ELF file"),
            ElfError::NotLittleEndian => f.write_str("not a little-endian ELF file"),
            ElfError::BadVersion => f.write_str("unknown ELF version"),
            ElfError::WrongMachine(m) => write!(f, "ELF machine {m} is not x86-64"),
            ElfError::WrongType(t) => write!(f, "ELF type {t} is not an executable"),
            ElfError::BadPhentsize(s) => write!(f, "ELF program header size {s} is not 56"),
            ElfError::TooManyPhdrs(n) => write!(f, "{n} ELF program headers (at most {MAX_PHNUM})"),
            ElfError::PhdrsOutOfBounds => f.write_str("ELF program headers outside the file"),
            ElfError::InterpOutOfBounds => f.write_str("ELF interpreter path outside the file"),
            ElfError::InterpNotTerminated => {
                f.write_str("ELF interpreter path empty or not NUL-terminated")
            }
            ElfError::InterpTooLong => f.write_str("ELF interpreter path too long"),
            ElfError::InterpNotUtf8 => f.write_str("ELF interpreter path not UTF-8"),
            ElfError::FileszExceedsMemsz => {
                f.write_str("ELF segment file size exceeds memory size")
            }
            ElfError::Misaligned => f.write_str("ELF segment offset and address misaligned"),
            ElfError::Overflow => f.write_str("ELF address arithmetic overflows"),
            ElfError::SegmentOutOfFile => f.write_str("ELF segment outside the file"),
            ElfError::Overlap => f.write_str("ELF segments unsorted or overlapping"),
            ElfError::SpanTooLarge => f.write_str("ELF segments span too much address space"),
            ElfError::NoLoadSegments => f.write_str("ELF file has nothing to load"),
            ElfError::MisalignedBase => f.write_str("load base not page-aligned"),
        }
    }
}

// ---------------------------------------------------------------------------
// Little-endian field reads

/// `N` bytes at `off`, or `None` if they are not all inside `bytes`.
fn array_at<const N: usize>(bytes: &[u8], off: usize) -> Option<[u8; N]> {
    bytes.get(off..)?.first_chunk::<N>().copied()
}

fn u16_at(bytes: &[u8], off: usize) -> Option<u16> {
    array_at(bytes, off).map(u16::from_le_bytes)
}

fn u32_at(bytes: &[u8], off: usize) -> Option<u32> {
    array_at(bytes, off).map(u32::from_le_bytes)
}

fn u64_at(bytes: &[u8], off: usize) -> Option<u64> {
    array_at(bytes, off).map(u64::from_le_bytes)
}

const fn page_down(addr: u64) -> u64 {
    addr & !(PAGE_SIZE - 1)
}

fn page_up(addr: u64) -> Result<u64, ElfError> {
    addr.checked_add(PAGE_SIZE - 1)
        .map(page_down)
        .ok_or(ElfError::Overflow)
}

fn add(a: u64, b: u64) -> Result<u64, ElfError> {
    a.checked_add(b).ok_or(ElfError::Overflow)
}

// ---------------------------------------------------------------------------
// Program headers

/// Segment permission bits (`p_flags`), also used as the mapping protection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SegmentFlags(pub u32);

impl SegmentFlags {
    /// `PF_X`.
    pub const X: SegmentFlags = SegmentFlags(1);
    /// `PF_W`.
    pub const W: SegmentFlags = SegmentFlags(2);
    /// `PF_R`.
    pub const R: SegmentFlags = SegmentFlags(4);

    /// The raw bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// `true` if every bit of `other` is set.
    pub const fn contains(self, other: SegmentFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// `PF_R` is set.
    pub const fn readable(self) -> bool {
        self.contains(SegmentFlags::R)
    }

    /// `PF_W` is set.
    pub const fn writable(self) -> bool {
        self.contains(SegmentFlags::W)
    }

    /// `PF_X` is set.
    pub const fn executable(self) -> bool {
        self.contains(SegmentFlags::X)
    }

    /// Only the R/W/X bits (processor- and OS-specific bits dropped).
    pub const fn rwx(self) -> SegmentFlags {
        SegmentFlags(self.0 & 7)
    }
}

impl core::ops::BitOr for SegmentFlags {
    type Output = SegmentFlags;

    fn bitor(self, rhs: SegmentFlags) -> SegmentFlags {
        SegmentFlags(self.0 | rhs.0)
    }
}

/// One decoded program header (`p_paddr` is omitted: nothing uses it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProgramHeader {
    /// `p_type` (`PT_LOAD`, ...).
    pub p_type: u32,
    /// `p_flags`.
    pub flags: SegmentFlags,
    /// `p_offset`: where the segment's bytes start in the file.
    pub offset: u64,
    /// `p_vaddr`: where the segment starts in memory (before any base).
    pub vaddr: u64,
    /// `p_filesz`: bytes taken from the file.
    pub filesz: u64,
    /// `p_memsz`: bytes in memory; the rest after `filesz` is zero.
    pub memsz: u64,
    /// `p_align`.
    pub align: u64,
}

impl ProgramHeader {
    /// Decodes one table entry; `None` only if `entry` is shorter than 56 bytes.
    fn parse(entry: &[u8]) -> Option<ProgramHeader> {
        Some(ProgramHeader {
            p_type: u32_at(entry, 0)?,
            flags: SegmentFlags(u32_at(entry, 4)?),
            offset: u64_at(entry, 8)?,
            vaddr: u64_at(entry, 16)?,
            filesz: u64_at(entry, 32)?,
            memsz: u64_at(entry, 40)?,
            align: u64_at(entry, 48)?,
        })
    }
}

/// Iterator over the program header table, in file order.
#[derive(Debug, Clone)]
pub struct Phdrs<'a> {
    entries: core::slice::Iter<'a, [u8; PHDR_SIZE]>,
}

impl Iterator for Phdrs<'_> {
    type Item = ProgramHeader;

    fn next(&mut self) -> Option<ProgramHeader> {
        self.entries.next().and_then(|e| ProgramHeader::parse(e))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.entries.size_hint()
    }
}

impl ExactSizeIterator for Phdrs<'_> {}

// ---------------------------------------------------------------------------
// Elf

/// How the executable must be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfKind<'a> {
    /// `ET_EXEC` without interpreter: jump to the entry point at its fixed address.
    Static,
    /// `ET_DYN` without interpreter (static-PIE, or `ld.so` run directly):
    /// load at a chosen base; it relocates itself.
    StaticPie,
    /// Has `PT_INTERP`: load the interpreter too and start there.
    Dynamic {
        /// The interpreter's path, e.g. `/lib64/ld-linux-x86-64.so.2`.
        interpreter: &'a str,
    },
}

/// A checked view of an ELF64 little-endian x86-64 executable.
///
/// Construction guarantees a valid header, a program header table inside the
/// buffer with at most [`MAX_PHNUM`] entries, and a well-formed `PT_INTERP`
/// if there is one.
#[derive(Clone, Copy)]
pub struct Elf<'a> {
    bytes: &'a [u8],
    e_type: u16,
    entry: u64,
    phoff: u64,
    phnum: u16,
    phdrs: &'a [[u8; PHDR_SIZE]],
    interpreter: Option<&'a str>,
}

/// Leaves out the file's bytes, which may be megabytes.
impl fmt::Debug for Elf<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Elf")
            .field("len", &self.bytes.len())
            .field("e_type", &self.e_type)
            .field("entry", &format_args!("{:#x}", self.entry))
            .field("phoff", &self.phoff)
            .field("phnum", &self.phnum)
            .field("interpreter", &self.interpreter)
            .finish()
    }
}

impl<'a> Elf<'a> {
    /// Checks the header, the program header table and `PT_INTERP`.
    pub fn parse(bytes: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        let hdr = bytes
            .first_chunk::<EHDR_SIZE>()
            .ok_or(ElfError::Truncated)?;
        let [m0, m1, m2, m3, class, data, version, ..] = *hdr;
        if [m0, m1, m2, m3] != ELFMAG {
            return Err(ElfError::BadMagic);
        }
        if class != ELFCLASS64 {
            return Err(ElfError::NotElf64);
        }
        if data != ELFDATA2LSB {
            return Err(ElfError::NotLittleEndian);
        }
        if version != EV_CURRENT {
            return Err(ElfError::BadVersion);
        }
        let field16 = |off| u16_at(hdr, off).ok_or(ElfError::Truncated);
        let field64 = |off| u64_at(hdr, off).ok_or(ElfError::Truncated);
        let e_type = field16(16)?;
        let e_machine = field16(18)?;
        let e_version = u32_at(hdr, 20).ok_or(ElfError::Truncated)?;
        let entry = field64(24)?;
        let phoff = field64(32)?;
        let phentsize = field16(54)?;
        let phnum = field16(56)?;

        if e_machine != EM_X86_64 {
            return Err(ElfError::WrongMachine(e_machine));
        }
        if e_type != ET_EXEC && e_type != ET_DYN {
            return Err(ElfError::WrongType(e_type));
        }
        if e_version != u32::from(EV_CURRENT) {
            return Err(ElfError::BadVersion);
        }
        if usize::from(phentsize) != PHDR_SIZE {
            return Err(ElfError::BadPhentsize(phentsize));
        }
        if phnum > MAX_PHNUM {
            return Err(ElfError::TooManyPhdrs(phnum));
        }
        let table = usize::try_from(phoff)
            .ok()
            .and_then(|start| {
                let len = usize::from(phnum).checked_mul(PHDR_SIZE)?;
                bytes.get(start..start.checked_add(len)?)
            })
            .ok_or(ElfError::PhdrsOutOfBounds)?;
        let (phdrs, _) = table.as_chunks::<PHDR_SIZE>();

        let mut elf = Elf {
            bytes,
            e_type,
            entry,
            phoff,
            phnum,
            phdrs,
            interpreter: None,
        };
        // Like Linux, the first PT_INTERP wins.
        if let Some(ph) = elf.phdrs().find(|ph| ph.p_type == PT_INTERP) {
            elf.interpreter = Some(parse_interp(bytes, &ph)?);
        }
        Ok(elf)
    }

    /// The whole file.
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `e_type`: [`ET_EXEC`] or [`ET_DYN`].
    pub const fn e_type(&self) -> u16 {
        self.e_type
    }

    /// `true` for `ET_DYN`: the segments may (must) be placed at a chosen base.
    pub const fn is_pie(&self) -> bool {
        self.e_type == ET_DYN
    }

    /// How to start it: static, static-PIE or through an interpreter.
    pub const fn kind(&self) -> ElfKind<'a> {
        match (self.interpreter, self.is_pie()) {
            (Some(interpreter), _) => ElfKind::Dynamic { interpreter },
            (None, false) => ElfKind::Static,
            (None, true) => ElfKind::StaticPie,
        }
    }

    /// The `PT_INTERP` path, if any.
    pub const fn interpreter(&self) -> Option<&'a str> {
        self.interpreter
    }

    /// `e_entry`, before any base is added.
    pub const fn entry(&self) -> u64 {
        self.entry
    }

    /// `e_phoff`: file offset of the program header table.
    pub const fn phoff(&self) -> u64 {
        self.phoff
    }

    /// `e_phnum` (for `AT_PHNUM`).
    pub const fn phnum(&self) -> u16 {
        self.phnum
    }

    /// `e_phentsize`, always 56 once parsed (for `AT_PHENT`).
    pub const fn phent(&self) -> u16 {
        PHDR_SIZE as u16
    }

    /// The program headers in file order.
    pub fn phdrs(&self) -> Phdrs<'a> {
        Phdrs {
            entries: self.phdrs.iter(),
        }
    }

    /// Where the program header table is in memory, before any base (for
    /// `AT_PHDR`, which libc uses to find `PT_TLS` and `PT_DYNAMIC`).
    ///
    /// `PT_PHDR` if present; otherwise, as Linux does, the address inside the
    /// `PT_LOAD` whose file bytes contain the whole table; `None` if the
    /// table is not loaded at all.
    pub fn phdr_vaddr(&self) -> Option<u64> {
        if let Some(ph) = self.phdrs().find(|ph| ph.p_type == PT_PHDR) {
            return Some(ph.vaddr);
        }
        let table_len = u64::from(self.phnum).checked_mul(PHDR_SIZE as u64)?;
        let table_end = self.phoff.checked_add(table_len)?;
        self.phdrs()
            .filter(|ph| ph.p_type == PT_LOAD)
            .find_map(|ph| {
                let file_end = ph.offset.checked_add(ph.filesz)?;
                if ph.offset <= self.phoff && table_end <= file_end {
                    ph.vaddr.checked_add(self.phoff - ph.offset)
                } else {
                    None
                }
            })
    }

    /// Checks the `PT_LOAD` segments and turns them into page-aligned mappings.
    ///
    /// `base` is the load bias for a position-independent executable: it is
    /// added to every address (so a PIE linked at 0 lands at `base`) and must
    /// be page-aligned; aligning it to [`LoadPlan::align`] as well keeps large
    /// `p_align` (huge pages) meaningful. It is ignored for `ET_EXEC`, whose
    /// addresses are fixed. Addresses are not checked against the user half
    /// of the address space: that is the address-space layout's job.
    pub fn load_plan(&self, base: u64) -> Result<LoadPlan, ElfError> {
        let bias = if self.is_pie() {
            if !base.is_multiple_of(PAGE_SIZE) {
                return Err(ElfError::MisalignedBase);
            }
            base
        } else {
            0
        };
        let file_len = u64::try_from(self.bytes.len()).map_err(|_| ElfError::Overflow)?;

        let mut segments = Vec::new();
        let mut align = PAGE_SIZE;
        let mut tls = None;
        let mut gnu_stack_executable = false;
        let mut relro = None;
        // End (page-aligned, unbiased) of the previous PT_LOAD.
        let mut prev_end: Option<u64> = None;
        // Lowest page (unbiased) of the first PT_LOAD.
        let mut first_start: Option<u64> = None;

        for ph in self.phdrs() {
            match ph.p_type {
                PT_LOAD => {
                    let Some(seg) = check_load(&ph, file_len)? else {
                        continue;
                    };
                    if prev_end.is_some_and(|end| seg.vaddr_start < end) {
                        return Err(ElfError::Overlap);
                    }
                    let span_start = *first_start.get_or_insert(seg.vaddr_start);
                    // Cannot underflow: segments ascend from `span_start`.
                    let span = seg.vaddr_end.checked_sub(span_start);
                    if span.is_none_or(|span| span > MAX_SPAN) {
                        return Err(ElfError::SpanTooLarge);
                    }
                    prev_end = Some(seg.vaddr_end);
                    if ph.align.is_power_of_two() {
                        align = align.max(ph.align);
                    }
                    segments.push(seg.biased(bias)?);
                }
                PT_TLS if tls.is_none() => {
                    if ph.filesz > ph.memsz {
                        return Err(ElfError::FileszExceedsMemsz);
                    }
                    add(ph.vaddr, ph.memsz)?;
                    if ph.align > 1 && !ph.align.is_power_of_two() {
                        return Err(ElfError::Misaligned);
                    }
                    tls = Some(ph);
                }
                PT_GNU_STACK => gnu_stack_executable = ph.flags.executable(),
                PT_GNU_RELRO if relro.is_none() => {
                    // Rounded as glibc's `_dl_protect_relro` does: both ends down.
                    let start = page_down(add(ph.vaddr, bias)?);
                    let end = page_down(add(add(ph.vaddr, ph.memsz)?, bias)?);
                    relro = Some((start < end).then_some((start, end)));
                }
                _ => {}
            }
        }

        let (Some(first), Some(last)) = (segments.first(), segments.last()) else {
            return Err(ElfError::NoLoadSegments);
        };
        let (span_start, span_end) = (first.vaddr_start, last.vaddr_end);
        let phdr = self.phdr_vaddr().map(|p| add(p, bias)).transpose()?;
        Ok(LoadPlan {
            bias,
            span_start,
            span_end,
            entry: add(self.entry, bias)?,
            phdr,
            align,
            tls,
            gnu_stack_executable,
            relro: relro.flatten(),
            segments,
        })
    }
}

/// Validates `PT_INTERP` as Linux does (NUL-terminated, at most `PATH_MAX`)
/// and returns the path before the first NUL.
fn parse_interp<'a>(bytes: &'a [u8], ph: &ProgramHeader) -> Result<&'a str, ElfError> {
    if ph.filesz > MAX_INTERP_LEN {
        return Err(ElfError::InterpTooLong);
    }
    let raw = usize::try_from(ph.offset)
        .ok()
        .and_then(|start| {
            let len = usize::try_from(ph.filesz).ok()?;
            bytes.get(start..start.checked_add(len)?)
        })
        .ok_or(ElfError::InterpOutOfBounds)?;
    let Some((&0, _)) = raw.split_last() else {
        return Err(ElfError::InterpNotTerminated);
    };
    let path = raw.split(|&b| b == 0).next().unwrap_or_default();
    if path.is_empty() {
        return Err(ElfError::InterpNotTerminated);
    }
    core::str::from_utf8(path).map_err(|_| ElfError::InterpNotUtf8)
}

/// Checks one `PT_LOAD` and computes its unbiased mapping; `None` for an
/// empty segment, which maps nothing.
fn check_load(ph: &ProgramHeader, file_len: u64) -> Result<Option<Segment>, ElfError> {
    if ph.filesz > ph.memsz {
        return Err(ElfError::FileszExceedsMemsz);
    }
    let page_off = ph.vaddr % PAGE_SIZE;
    if ph.offset % PAGE_SIZE != page_off {
        return Err(ElfError::Misaligned);
    }
    if ph.align > 1 && (!ph.align.is_power_of_two() || ph.offset % ph.align != ph.vaddr % ph.align)
    {
        return Err(ElfError::Misaligned);
    }
    let mem_end = add(ph.vaddr, ph.memsz)?;
    let vaddr_end = page_up(mem_end)?;
    if ph.filesz > 0 && add(ph.offset, ph.filesz)? > file_len {
        return Err(ElfError::SegmentOutOfFile);
    }
    if ph.memsz == 0 {
        return Ok(None);
    }
    let vaddr_start = page_down(ph.vaddr);
    // The file page holding `p_offset` is mapped whole, so the in-page
    // prefix comes from the file too (as in Linux).
    // An all-bss segment takes nothing from the file, and its (unchecked)
    // offset is reported as 0 so that the file range is always in bounds.
    let (file_offset, file_bytes) = if ph.filesz == 0 {
        (0, 0)
    } else {
        (page_down(ph.offset), add(page_off, ph.filesz)?)
    };
    let zero_from = add(vaddr_start, file_bytes)?;
    Ok(Some(Segment {
        vaddr_start,
        vaddr_end,
        file_offset,
        file_bytes,
        zero_from,
        zero_to: vaddr_end,
        prot: ph.flags.rwx(),
    }))
}

// ---------------------------------------------------------------------------
// Load plan

/// One `PT_LOAD` as a page-aligned mapping.
///
/// The mapping covers `[vaddr_start, vaddr_end)`. Its first `file_bytes`
/// bytes are the file's `[file_offset, file_offset + file_bytes)`; every byte
/// in `[zero_from, zero_to)` (the bss tail of the last file page, then whole
/// anonymous pages) reads as zero. `zero_from == vaddr_start + file_bytes`
/// and `zero_to == vaddr_end`, so a loader that copies can fill the mapping
/// in two steps; one that maps file pages must still zero
/// `[zero_from, page_up(zero_from))` in its private copy of the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Segment {
    /// First mapped address (page-aligned, base included).
    pub vaddr_start: u64,
    /// End of the mapping (page-aligned, exclusive, base included).
    pub vaddr_end: u64,
    /// File offset mapped at `vaddr_start` (page-aligned); 0 if `file_bytes` is 0.
    pub file_offset: u64,
    /// Bytes to take from the file, starting at `file_offset`; 0 for a
    /// segment that is all bss. `file_offset + file_bytes` never exceeds
    /// the file length.
    pub file_bytes: u64,
    /// First address that must be zero.
    pub zero_from: u64,
    /// End of the zero range (equals `vaddr_end`).
    pub zero_to: u64,
    /// Protection: the segment's R/W/X flags.
    pub prot: SegmentFlags,
}

impl Segment {
    /// Adds the load bias to every address.
    fn biased(self, bias: u64) -> Result<Segment, ElfError> {
        Ok(Segment {
            vaddr_start: add(self.vaddr_start, bias)?,
            vaddr_end: add(self.vaddr_end, bias)?,
            zero_from: add(self.zero_from, bias)?,
            zero_to: add(self.zero_to, bias)?,
            ..self
        })
    }

    /// Length of the mapping in bytes.
    pub const fn len(&self) -> u64 {
        self.vaddr_end.saturating_sub(self.vaddr_start)
    }

    /// `true` if the mapping is empty (never, for a planned segment).
    pub const fn is_empty(&self) -> bool {
        self.vaddr_end <= self.vaddr_start
    }

    /// `true` if `addr` is inside the mapping.
    pub const fn contains(&self, addr: u64) -> bool {
        self.vaddr_start <= addr && addr < self.vaddr_end
    }
}

/// Everything the loader and the initial stack need from an executable, with
/// the base already applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadPlan {
    /// The `PT_LOAD` mappings, ascending and on disjoint pages.
    pub segments: Vec<Segment>,
    /// The bias added to every address: the base for a PIE, 0 for `ET_EXEC`
    /// (and `AT_BASE` when this is the interpreter).
    pub bias: u64,
    /// Lowest mapped address (page-aligned).
    pub span_start: u64,
    /// End of the highest mapping (page-aligned, exclusive); the program
    /// break starts here.
    pub span_end: u64,
    /// Entry point (`AT_ENTRY`, or where to jump if there is no interpreter).
    pub entry: u64,
    /// The program headers in memory (`AT_PHDR`); `None` if they are not loaded.
    pub phdr: Option<u64>,
    /// Largest power-of-two `p_align` of the `PT_LOAD`s, at least a page:
    /// the alignment a PIE base should have.
    pub align: u64,
    /// The first `PT_TLS`, unbiased as in the file (libc reads it through
    /// `AT_PHDR` anyway).
    pub tls: Option<ProgramHeader>,
    /// `PT_GNU_STACK` asks for an executable stack. Without `PT_GNU_STACK`
    /// the x86-64 default is a non-executable stack.
    pub gnu_stack_executable: bool,
    /// Page range to make read-only after relocation (`PT_GNU_RELRO`, both
    /// ends rounded down as glibc does); `None` if absent or under a page.
    pub relro: Option<(u64, u64)>,
}

// ---------------------------------------------------------------------------
// Tests

#[cfg(test)]
mod tests {
    use super::*;

    const R: SegmentFlags = SegmentFlags::R;
    const W: SegmentFlags = SegmentFlags::W;
    const X: SegmentFlags = SegmentFlags::X;

    fn ph(
        p_type: u32,
        flags: SegmentFlags,
        offset: u64,
        vaddr: u64,
        filesz: u64,
        memsz: u64,
    ) -> ProgramHeader {
        ProgramHeader {
            p_type,
            flags,
            offset,
            vaddr,
            filesz,
            memsz,
            align: if p_type == PT_LOAD { PAGE_SIZE } else { 8 },
        }
    }

    /// Writes an ELF header, the program headers right after it (at 64) and
    /// extra bytes at given offsets into a zero-filled file of `len` bytes.
    struct Builder {
        bytes: Vec<u8>,
    }

    impl Builder {
        fn new(e_type: u16, entry: u64, phdrs: &[ProgramHeader], len: usize) -> Builder {
            let mut bytes = vec![0u8; len.max(EHDR_SIZE + phdrs.len() * PHDR_SIZE)];
            bytes[..4].copy_from_slice(&ELFMAG);
            bytes[4] = ELFCLASS64;
            bytes[5] = ELFDATA2LSB;
            bytes[6] = EV_CURRENT;
            let mut b = Builder { bytes };
            b.put_u16(16, e_type);
            b.put_u16(18, EM_X86_64);
            b.put_u32(20, 1);
            b.put_u64(24, entry);
            b.put_u64(32, EHDR_SIZE as u64); // e_phoff
            b.put_u16(52, EHDR_SIZE as u16);
            b.put_u16(54, PHDR_SIZE as u16);
            b.put_u16(56, phdrs.len() as u16);
            for (i, p) in phdrs.iter().enumerate() {
                b.put_phdr(i, p);
            }
            b
        }

        fn put(&mut self, off: usize, data: &[u8]) -> &mut Builder {
            self.bytes[off..off + data.len()].copy_from_slice(data);
            self
        }

        fn put_u16(&mut self, off: usize, v: u16) -> &mut Builder {
            self.put(off, &v.to_le_bytes())
        }

        fn put_u32(&mut self, off: usize, v: u32) -> &mut Builder {
            self.put(off, &v.to_le_bytes())
        }

        fn put_u64(&mut self, off: usize, v: u64) -> &mut Builder {
            self.put(off, &v.to_le_bytes())
        }

        fn put_phdr(&mut self, i: usize, p: &ProgramHeader) -> &mut Builder {
            let o = EHDR_SIZE + i * PHDR_SIZE;
            self.put_u32(o, p.p_type)
                .put_u32(o + 4, p.flags.0)
                .put_u64(o + 8, p.offset)
                .put_u64(o + 16, p.vaddr)
                .put_u64(o + 24, p.vaddr)
                .put_u64(o + 32, p.filesz)
                .put_u64(o + 40, p.memsz)
                .put_u64(o + 48, p.align)
        }

        fn build(&self) -> Vec<u8> {
            self.bytes.clone()
        }
    }

    /// A static, fixed-address executable as GNU ld lays one out.
    fn static_exec() -> Vec<ProgramHeader> {
        vec![
            ph(PT_LOAD, R, 0, 0x40_0000, 0x1000, 0x1000),
            ph(PT_LOAD, R | X, 0x1000, 0x40_1000, 0x2345, 0x2345),
            ph(PT_LOAD, R | W, 0x3e10, 0x40_4e10, 0x100, 0x2000),
            ph(PT_TLS, R, 0x3e10, 0x40_4e10, 0x20, 0x40),
            ph(PT_GNU_STACK, R | W, 0, 0, 0, 0),
            ph(PT_GNU_RELRO, R, 0x3e10, 0x40_4e10, 0x1f0, 0x1f0),
        ]
    }

    const STATIC_LEN: usize = 0x3f10;
    const INTERP: &[u8] = b"/lib64/ld-linux-x86-64.so.2\0";

    /// A PIE linked at 0. With `interp`, a dynamic one (PT_INTERP at 0x318).
    fn pie(interp: Option<&[u8]>) -> Vec<u8> {
        let mut phdrs = vec![ph(PT_PHDR, R, 64, 64, 0x1c0, 0x1c0)];
        if let Some(i) = interp {
            phdrs.push(ph(
                PT_INTERP,
                R,
                0x318,
                0x318,
                i.len() as u64,
                i.len() as u64,
            ));
        }
        phdrs.extend([
            ph(PT_LOAD, R, 0, 0, 0x5c8, 0x5c8),
            ph(PT_LOAD, R | X, 0x1000, 0x1000, 0x1a5, 0x1a5),
            ph(PT_LOAD, R, 0x2000, 0x2000, 0xf4, 0xf4),
            ph(PT_LOAD, R | W, 0x2db8, 0x3db8, 0x258, 0x260),
            ph(PT_DYNAMIC, R | W, 0x2dc8, 0x3dc8, 0x1f0, 0x1f0),
            ph(PT_GNU_STACK, R | W | X, 0, 0, 0, 0),
        ]);
        let mut b = Builder::new(ET_DYN, 0x1040, &phdrs, 0x3010);
        if let Some(i) = interp {
            b.put(0x318, i);
        }
        b.build()
    }

    #[test]
    fn static_executable() {
        let bytes = Builder::new(ET_EXEC, 0x40_1020, &static_exec(), STATIC_LEN).build();
        let elf = Elf::parse(&bytes).unwrap();
        assert_eq!(elf.kind(), ElfKind::Static);
        assert!(!elf.is_pie());
        assert_eq!(elf.entry(), 0x40_1020);
        assert_eq!((elf.phnum(), elf.phent()), (6, 56));
        assert_eq!(elf.phdrs().len(), 6);
        assert_eq!(elf.phdrs().nth(1), Some(static_exec()[1]));
        // No PT_PHDR: found inside the first PT_LOAD.
        assert_eq!(elf.phdr_vaddr(), Some(0x40_0040));

        // The base is ignored for ET_EXEC.
        let plan = elf.load_plan(0x7000_0000_0000).unwrap();
        assert_eq!(plan, elf.load_plan(0).unwrap());
        assert_eq!(plan.bias, 0);
        assert_eq!(plan.entry, 0x40_1020);
        assert_eq!(plan.phdr, Some(0x40_0040));
        assert_eq!((plan.span_start, plan.span_end), (0x40_0000, 0x40_7000));
        assert_eq!(plan.align, PAGE_SIZE);
        assert!(!plan.gnu_stack_executable);
        assert_eq!(plan.tls, Some(static_exec()[3]));
        assert_eq!(plan.relro, Some((0x40_4000, 0x40_5000)));
        assert_eq!(
            plan.segments,
            [
                Segment {
                    vaddr_start: 0x40_0000,
                    vaddr_end: 0x40_1000,
                    file_offset: 0,
                    file_bytes: 0x1000,
                    zero_from: 0x40_1000,
                    zero_to: 0x40_1000,
                    prot: R,
                },
                Segment {
                    vaddr_start: 0x40_1000,
                    vaddr_end: 0x40_4000,
                    file_offset: 0x1000,
                    file_bytes: 0x2345,
                    zero_from: 0x40_3345,
                    zero_to: 0x40_4000,
                    prot: R | X,
                },
                // bss: the file page at 0x3000 holds the data start at
                // 0xe10; zero from the end of the file bytes to the end.
                Segment {
                    vaddr_start: 0x40_4000,
                    vaddr_end: 0x40_7000,
                    file_offset: 0x3000,
                    file_bytes: 0xf10,
                    zero_from: 0x40_4f10,
                    zero_to: 0x40_7000,
                    prot: R | W,
                },
            ]
        );
    }

    #[test]
    fn static_pie() {
        let bytes = pie(None);
        let elf = Elf::parse(&bytes).unwrap();
        assert_eq!(elf.kind(), ElfKind::StaticPie);
        assert!(elf.is_pie());
        assert_eq!(elf.interpreter(), None);
        assert_eq!(elf.phdr_vaddr(), Some(64));

        let base = 0x7f12_3456_7000;
        let plan = elf.load_plan(base).unwrap();
        assert_eq!(plan.bias, base);
        assert_eq!(plan.entry, base + 0x1040);
        assert_eq!(plan.phdr, Some(base + 64));
        assert_eq!((plan.span_start, plan.span_end), (base, base + 0x5000));
        assert!(plan.gnu_stack_executable);
        assert_eq!((plan.tls, plan.relro), (None, None));
        let starts: Vec<u64> = plan.segments.iter().map(|s| s.vaddr_start - base).collect();
        assert_eq!(starts, [0, 0x1000, 0x2000, 0x3000]);
        let data = plan.segments[3];
        assert_eq!(data.vaddr_end, base + 0x5000);
        assert_eq!(data.file_offset, 0x2000);
        assert_eq!(data.file_bytes, 0xdb8 + 0x258);
        assert_eq!(data.zero_from, base + 0x3db8 + 0x258);
        assert_eq!(data.zero_to, base + 0x5000);
        assert_eq!(data.prot, R | W);

        // Base 0 and a page-misaligned base.
        assert_eq!(elf.load_plan(0).unwrap().span_start, 0);
        assert_eq!(elf.load_plan(base + 8), Err(ElfError::MisalignedBase));
        // A base that pushes the end past 2^64.
        assert_eq!(elf.load_plan(u64::MAX - 0xfff), Err(ElfError::Overflow));
    }

    #[test]
    fn dynamic() {
        let bytes = pie(Some(INTERP));
        let elf = Elf::parse(&bytes).unwrap();
        assert_eq!(
            elf.kind(),
            ElfKind::Dynamic {
                interpreter: "/lib64/ld-linux-x86-64.so.2"
            }
        );
        assert!(elf.is_pie());
        let plan = elf.load_plan(0x5555_5555_4000).unwrap();
        assert_eq!(plan.segments.len(), 4);
        assert_eq!(plan.entry, 0x5555_5555_5040);

        // NUL padding after the path is allowed; the path ends at the first NUL.
        let mut b = pie(Some(b"/ld.so\0\0\0\0"));
        let elf = Elf::parse(&b).unwrap();
        assert_eq!(elf.interpreter(), Some("/ld.so"));
        // A dynamic ET_EXEC is still fixed-address.
        b[16] = ET_EXEC as u8;
        let elf = Elf::parse(&b).unwrap();
        assert!(!elf.is_pie());
        assert_eq!(
            elf.kind(),
            ElfKind::Dynamic {
                interpreter: "/ld.so"
            }
        );
    }

    #[test]
    fn bss_only_segment_and_empty_segments() {
        let phdrs = [
            ph(PT_LOAD, R | X, 0, 0x40_0000, 0x800, 0x800),
            ph(PT_LOAD, R | W, 0, 0x40_1000, 0, 0),
            // All bss: the offset is irrelevant, nothing comes from the file.
            ph(PT_LOAD, R | W, 0xdead_0000, 0x40_2000, 0, 0x1800),
        ];
        let bytes = Builder::new(ET_EXEC, 0x40_0100, &phdrs, 0x800).build();
        let plan = Elf::parse(&bytes).unwrap().load_plan(0).unwrap();
        assert_eq!(plan.segments.len(), 2);
        let bss = plan.segments[1];
        assert_eq!(
            (bss.file_offset, bss.file_bytes, bss.zero_from, bss.zero_to),
            (0, 0, 0x40_2000, 0x40_4000)
        );
        assert_eq!(plan.span_end, 0x40_4000);
    }

    #[test]
    fn large_alignment() {
        let mut phdrs = static_exec();
        phdrs[0].align = 0x20_0000;
        phdrs[1].align = 0x20_0000;
        let bytes = Builder::new(ET_EXEC, 0x40_1020, &phdrs, STATIC_LEN).build();
        assert_eq!(
            Elf::parse(&bytes).unwrap().load_plan(0).unwrap().align,
            0x20_0000
        );
        // Congruent modulo the page but not modulo p_align.
        phdrs[1].vaddr += 0x10_0000;
        let bytes = Builder::new(ET_EXEC, 0x40_1020, &phdrs, STATIC_LEN).build();
        assert_eq!(
            Elf::parse(&bytes).unwrap().load_plan(0),
            Err(ElfError::Misaligned)
        );
        // p_align not a power of two.
        let mut phdrs = static_exec();
        phdrs[1].align = 0x3000;
        let bytes = Builder::new(ET_EXEC, 0x40_1020, &phdrs, STATIC_LEN).build();
        assert_eq!(
            Elf::parse(&bytes).unwrap().load_plan(0),
            Err(ElfError::Misaligned)
        );
    }

    fn static_bytes() -> Vec<u8> {
        Builder::new(ET_EXEC, 0x40_1020, &static_exec(), STATIC_LEN).build()
    }

    #[test]
    fn header_rejections() {
        let good = static_bytes();
        let with = |off: usize, data: &[u8]| {
            let mut b = good.clone();
            b[off..off + data.len()].copy_from_slice(data);
            Elf::parse(&b).map(|_| ())
        };
        assert_eq!(with(0, b"\x7fELF"), Ok(()));
        assert_eq!(with(0, b"\x7fELG"), Err(ElfError::BadMagic));
        assert_eq!(with(0, b"MZ\x90\x00"), Err(ElfError::BadMagic));
        assert_eq!(with(4, &[1]), Err(ElfError::NotElf64));
        assert_eq!(with(5, &[2]), Err(ElfError::NotLittleEndian));
        assert_eq!(with(6, &[0]), Err(ElfError::BadVersion));
        assert_eq!(with(20, &[2]), Err(ElfError::BadVersion));
        assert_eq!(
            with(18, &3u16.to_le_bytes()),
            Err(ElfError::WrongMachine(3))
        );
        assert_eq!(
            with(18, &183u16.to_le_bytes()),
            Err(ElfError::WrongMachine(183))
        );
        assert_eq!(with(16, &1u16.to_le_bytes()), Err(ElfError::WrongType(1)));
        assert_eq!(with(16, &4u16.to_le_bytes()), Err(ElfError::WrongType(4)));
        assert_eq!(
            with(54, &64u16.to_le_bytes()),
            Err(ElfError::BadPhentsize(64))
        );
        assert_eq!(
            with(56, &129u16.to_le_bytes()),
            Err(ElfError::TooManyPhdrs(129))
        );
        assert_eq!(
            with(56, &0xffffu16.to_le_bytes()),
            Err(ElfError::TooManyPhdrs(0xffff))
        );

        // Program header table past the end, overflowing, or cut short.
        let end = good.len() as u64;
        assert_eq!(
            with(32, &end.to_le_bytes()),
            Err(ElfError::PhdrsOutOfBounds)
        );
        assert_eq!(
            with(32, &(end - 55).to_le_bytes()),
            Err(ElfError::PhdrsOutOfBounds)
        );
        assert_eq!(
            with(32, &u64::MAX.to_le_bytes()),
            Err(ElfError::PhdrsOutOfBounds)
        );
        assert_eq!(
            Elf::parse(&good[..EHDR_SIZE + 5 * PHDR_SIZE + 55]).map(|_| ()),
            Err(ElfError::PhdrsOutOfBounds)
        );
        // Zero program headers parse, but there is nothing to load.
        let mut b = good.clone();
        b[56..58].copy_from_slice(&0u16.to_le_bytes());
        let elf = Elf::parse(&b).unwrap();
        assert_eq!((elf.phdrs().count(), elf.phdr_vaddr()), (0, None));
        assert_eq!(elf.load_plan(0), Err(ElfError::NoLoadSegments));

        // Too short for a header at all.
        for len in [0, 3, 4, 63] {
            assert_eq!(
                Elf::parse(&good[..len]).map(|_| ()),
                Err(ElfError::Truncated)
            );
        }
    }

    #[test]
    fn interpreter_rejections() {
        fn parse(bytes: &[u8]) -> Result<Option<&str>, ElfError> {
            Elf::parse(bytes).map(|e| e.interpreter())
        }
        assert_eq!(
            parse(&pie(Some(b"/lib/ld.so"))),
            Err(ElfError::InterpNotTerminated)
        );
        assert_eq!(parse(&pie(Some(b"\0"))), Err(ElfError::InterpNotTerminated));
        assert_eq!(parse(&pie(Some(b""))), Err(ElfError::InterpNotTerminated));
        assert_eq!(
            parse(&pie(Some(b"/lib/\xffld.so\0"))),
            Err(ElfError::InterpNotUtf8)
        );

        // 4096 bytes including the NUL is the longest accepted.
        let mut long = vec![b'a'; 4095];
        long.push(0);
        let phdrs = [
            ph(PT_INTERP, R, 0x1000, 0x1000, 4096, 4096),
            ph(PT_LOAD, R, 0, 0, 0x2000, 0x2000),
        ];
        let mut b = Builder::new(ET_DYN, 0, &phdrs, 0x2000);
        b.put(0x1000, &long);
        assert_eq!(parse(&b.build()).unwrap().map(str::len), Some(4095));
        let phdrs = [ph(PT_INTERP, R, 0x1000, 0x1000, 4097, 4097)];
        let mut b = Builder::new(ET_DYN, 0, &phdrs, 0x3000);
        b.put(0x1000, &long).put(0x1000 + 4096, b"\0");
        assert_eq!(parse(&b.build()), Err(ElfError::InterpTooLong));

        // Out of the file, or with an overflowing offset.
        for (offset, filesz) in [(0x3000, 16), (0x2ff8, 16), (u64::MAX - 4, 16)] {
            let phdrs = [ph(PT_INTERP, R, offset, 0, filesz, filesz)];
            let b = Builder::new(ET_DYN, 0, &phdrs, 0x3000).build();
            assert_eq!(parse(&b), Err(ElfError::InterpOutOfBounds));
        }
    }

    /// The static executable with program header `i` replaced.
    fn plan_with(i: usize, p: ProgramHeader) -> Result<LoadPlan, ElfError> {
        let mut phdrs = static_exec();
        phdrs[i] = p;
        let bytes = Builder::new(ET_EXEC, 0x40_1020, &phdrs, STATIC_LEN).build();
        Elf::parse(&bytes)?.load_plan(0)
    }

    #[test]
    fn segment_rejections() {
        let text = static_exec()[1];
        let data = static_exec()[2];
        // filesz > memsz.
        let p = ProgramHeader {
            memsz: data.filesz - 1,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::FileszExceedsMemsz));
        let tls = static_exec()[3];
        let p = ProgramHeader {
            filesz: 0x80,
            ..tls
        };
        assert_eq!(plan_with(3, p), Err(ElfError::FileszExceedsMemsz));
        // Offset and address disagree modulo the page.
        let p = ProgramHeader {
            offset: 0x3e00,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::Misaligned));
        // Overlapping (the text's last page is the data's first) and unsorted.
        let p = ProgramHeader {
            memsz: 0x3001,
            ..text
        };
        assert_eq!(plan_with(1, p), Err(ElfError::Overlap));
        let p = ProgramHeader {
            vaddr: 0x30_0e10,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::Overlap));
        // Segment bytes past the end of the file.
        let p = ProgramHeader {
            filesz: 0x101,
            memsz: 0x2000,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::SegmentOutOfFile));
        let p = ProgramHeader {
            offset: 0xffff_ffff_ffff_fe10,
            filesz: 0x200,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::Overflow));
        // vaddr + memsz overflows, or its page-up does.
        let p = ProgramHeader {
            vaddr: 0xffff_ffff_ffff_fe10,
            memsz: 0x2000,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::Overflow));
        let p = ProgramHeader {
            vaddr: 0xffff_ffff_ffff_fe10,
            memsz: 0x1e0,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::Overflow));
        let p = ProgramHeader {
            memsz: u64::MAX,
            ..tls
        };
        assert_eq!(plan_with(3, p), Err(ElfError::Overflow));
        // Too large a span, but exactly 1 TiB is fine.
        let p = ProgramHeader {
            memsz: MAX_SPAN - 0x4e10,
            ..data
        };
        assert_eq!(plan_with(2, p).unwrap().span_end, 0x40_0000 + MAX_SPAN);
        let p = ProgramHeader {
            memsz: MAX_SPAN - 0x4e10 + 1,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::SpanTooLarge));
        let p = ProgramHeader {
            vaddr: 0x100_0040_4e10,
            ..data
        };
        assert_eq!(plan_with(2, p), Err(ElfError::SpanTooLarge));
    }

    #[test]
    fn errno_and_display() {
        let bytes = static_bytes();
        let debug = std::format!("{:?}", Elf::parse(&bytes).unwrap());
        assert!(
            debug.starts_with("Elf { len: 16144, e_type: 2, entry: 0x401020"),
            "{debug}"
        );
        assert_eq!(ElfError::BadMagic.errno(), Errno::ENOEXEC);
        assert_eq!(ElfError::MisalignedBase.errno(), Errno::EINVAL);
        assert_eq!(
            ElfError::WrongMachine(3).to_string(),
            "ELF machine 3 is not x86-64"
        );
    }

    // ---- real executables on the host (skipped if absent) ----

    fn check_host_file(path: &str) -> Option<(Vec<u8>, LoadPlan)> {
        let Ok(bytes) = std::fs::read(path) else {
            eprintln!("skipping: {path} not present");
            return None;
        };
        let elf = Elf::parse(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        let base = 0x5555_5555_0000;
        let plan = elf
            .load_plan(base)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!plan.segments.is_empty());
        assert!(plan.phdr.is_some(), "{path}: program headers not loaded");
        let exec = plan
            .segments
            .iter()
            .find(|s| s.contains(plan.entry))
            .unwrap_or_else(|| panic!("{path}: entry {:#x} not mapped", plan.entry));
        assert!(exec.prot.executable(), "{path}: entry not executable");
        for w in plan.segments.windows(2) {
            assert!(w[0].vaddr_end <= w[1].vaddr_start);
        }
        for s in &plan.segments {
            assert!(s.file_offset + s.file_bytes <= bytes.len() as u64);
            assert!(s.vaddr_start + s.file_bytes <= s.vaddr_end);
            assert_eq!(s.vaddr_start % PAGE_SIZE, 0);
            assert_eq!(s.file_offset % PAGE_SIZE, 0);
        }
        if elf.is_pie() {
            assert_eq!(plan.bias, base);
        }
        assert!(!plan.gnu_stack_executable, "{path}: executable stack");
        Some((bytes, plan))
    }

    #[test]
    fn host_busybox_or_ls() {
        let Some(path) = ["/bin/busybox", "/usr/bin/busybox", "/bin/ls"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
        else {
            eprintln!("skipping: no busybox or ls on this host");
            return;
        };
        check_host_file(path);
    }

    #[test]
    fn host_java() {
        let path = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
        if let Some((bytes, _)) = check_host_file(path) {
            let elf = Elf::parse(&bytes).unwrap();
            assert_eq!(
                elf.kind(),
                ElfKind::Dynamic {
                    interpreter: "/lib64/ld-linux-x86-64.so.2"
                }
            );
        }
    }

    #[test]
    fn host_dynamic_linker() {
        if let Some((bytes, plan)) = check_host_file("/lib64/ld-linux-x86-64.so.2") {
            let elf = Elf::parse(&bytes).unwrap();
            // ld.so is a self-relocating ET_DYN without an interpreter.
            assert_eq!(elf.kind(), ElfKind::StaticPie);
            assert!(plan.relro.is_some());
        }
    }
}
