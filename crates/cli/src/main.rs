//! vload command line (being built).
fn main() {}
