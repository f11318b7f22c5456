//! The embedded vDSO image: an x86-64 shared object whose dynamic section
//! is read-only (ld.so relocates a writable one in place, which faults in
//! the read-only [vdso] area), exporting the clock functions at version
//! LINUX_2.6, and built from the source next to it.

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    fn image() -> Vec<u8> {
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("vdso/vdso.so")).unwrap()
    }

    fn u16_at(b: &[u8], o: usize) -> u16 {
        u16::from_le_bytes([b[o], b[o + 1]])
    }

    fn u32_at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }

    fn u64_at(b: &[u8], o: usize) -> u64 {
        u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
    }

    #[test]
    fn is_a_shared_object_with_a_read_only_dynamic_section() {
        let b = image();
        assert_eq!(&b[..4], b"\x7fELF");
        assert_eq!(u16_at(&b, 16), 3, "ET_DYN");
        assert_eq!(u16_at(&b, 18), 62, "x86-64");
        assert!(b.len() <= 4096, "the kernel maps one page for it");
        let phoff = u64_at(&b, 32) as usize;
        let (phentsize, phnum) = (usize::from(u16_at(&b, 54)), usize::from(u16_at(&b, 56)));
        let mut dynamic = false;
        for i in 0..phnum {
            let ph = phoff + i * phentsize;
            let (ty, flags) = (u32_at(&b, ph), u32_at(&b, ph + 4));
            assert_eq!(flags & 2, 0, "segment {i} (type {ty}) is writable");
            dynamic |= ty == 2;
        }
        assert!(dynamic, "no PT_DYNAMIC");
        let text = String::from_utf8_lossy(&b);
        for name in [
            "__vdso_clock_gettime",
            "__vdso_gettimeofday",
            "__vdso_time",
            "__vdso_getcpu",
            "LINUX_2.6",
            "linux-vdso.so.1",
        ] {
            assert!(text.contains(name), "{name} missing");
        }
    }

    #[test]
    fn matches_its_source() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("vdso");
        let out = std::env::temp_dir().join(format!("astraea-vdso-{}.so", std::process::id()));
        let built = Command::new("gcc")
            .current_dir(&dir)
            .args([
                "-nostdlib",
                "-shared",
                "-fPIC",
                "-Wl,-T,vdso.lds",
                "-Wl,--version-script=vdso.ver",
                "-Wl,-soname=linux-vdso.so.1",
                "-Wl,--hash-style=both",
                "-Wl,-z,max-page-size=4096",
                "-Wl,--build-id=none",
                "-Wl,-z,noexecstack",
                "-o",
            ])
            .arg(&out)
            .arg("vdso.S")
            .status();
        if !built.is_ok_and(|s| s.success()) {
            eprintln!(
                "\n*** SKIPPED: gcc could not build the vDSO here; the image was not compared with its source ***\n"
            );
            return;
        }
        let stripped = Command::new("strip").arg("--strip-all").arg(&out).status();
        assert!(stripped.is_ok_and(|s| s.success()), "strip failed");
        let fresh = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_file(&out);
        assert!(
            fresh == image(),
            "libos/vdso/vdso.so is out of date with vdso.S: run ./x vdso"
        );
    }
}
