//! Links the kernel image with the library OS's linker script
//! (libos/kernel.ld: physical load addresses for PVH loaders).
fn main() {
    let dir = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let script = dir.join("../libos/kernel.ld");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("none") {
        println!("cargo:rustc-link-arg-bins=-T{}", script.display());
    }
    println!("cargo:rerun-if-changed={}", script.display());
}
