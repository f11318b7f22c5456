//! The program's virtual memory areas (being written: demand paging,
//! mprotect, reservations). For now only the `/proc/self/maps` text.

use alloc::string::String;

/// The text of `/proc/self/maps`: one line per area, Linux's format.
pub fn proc_maps() -> String {
    String::new()
}
