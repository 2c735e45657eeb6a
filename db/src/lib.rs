//! aics persistence (filled in by the persistence work).
#![forbid(unsafe_code)]
