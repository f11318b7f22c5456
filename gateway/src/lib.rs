//! The gateway: the 9P2000.L server on the controller that exports host files,
//! sockets and the console to partitions. Its server core arrives with issue 3;
//! today the crate only fixes its place in the dependency graph
//! (`hypervisor` → `gateway` → `9p`).
