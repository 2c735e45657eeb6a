//! The VFS: the platform's, whose log files hold their frames in a
//! [`Batch`] until the commit's (crate docs).
//!
//! SQLite gives a VFS one allocation of `szOsFile` bytes per open file.
//! Every file but a log is the platform's own, opened in that allocation as
//! the platform would. A log is a [`LogFile`] at its start, whose methods
//! are this module's, with the platform's file after it; each method first
//! writes what its batch holds, then calls the platform's.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

use crate::batch::Batch;

/// Who may have a database open while a connection of this process has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Any process: the platform's VFS ("unix"), which locks the
    /// wal-index (the `-shm` file) with `fcntl` at every transaction's
    /// start and end, about six system calls a commit.
    Shared,
    /// This process alone: the platform's "unix-excl", which takes one
    /// exclusive lock on the database file when it is first opened and
    /// keeps it until the process's last connection to it closes. Another
    /// process that opens the file is refused (`SQLITE_BUSY`, "database is
    /// locked"). The connections of this process coordinate in memory: the
    /// wal-index lives in the heap and no transaction makes a locking
    /// system call. Every connection of the process to the file must then
    /// be opened this way.
    Process,
}

impl Access {
    /// The VFS's name, to open a connection with.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Shared => NAME,
            Self::Process => NAME_PROCESS,
        }
    }

    /// The name as SQLite reads it.
    const fn c_name(self) -> &'static CStr {
        match self {
            Self::Shared => C_NAME,
            Self::Process => C_NAME_PROCESS,
        }
    }

    /// The platform's VFS under ours (`None`: the default).
    const fn root(self) -> Option<&'static CStr> {
        match self {
            Self::Shared => None,
            Self::Process => Some(c"unix-excl"),
        }
    }
}

/// The VFS's name for [`Access::Shared`], to open a connection with.
pub const NAME: &str = match C_NAME.to_str() {
    Ok(name) => name,
    Err(_) => panic!("the VFS's name is UTF-8"),
};
/// The same name as SQLite reads it.
const C_NAME: &CStr = c"aics-batched-log";
/// The VFS's name for [`Access::Process`].
pub const NAME_PROCESS: &str = match C_NAME_PROCESS.to_str() {
    Ok(name) => name,
    Err(_) => panic!("the VFS's name is UTF-8"),
};
const C_NAME_PROCESS: &CStr = c"aics-batched-log-excl";

/// Registers the VFS of `access` (once a process; not as the default) and
/// answers its name.
pub fn register(access: Access) -> Result<&'static str, rusqlite::Error> {
    static SHARED: OnceLock<c_int> = OnceLock::new();
    static PROCESS: OnceLock<c_int> = OnceLock::new();
    let registered = match access {
        Access::Shared => &SHARED,
        Access::Process => &PROCESS,
    };
    // SAFETY: `register_once` runs once per flavour; it only reads a
    // platform VFS and registers a VFS that lives as long as the process.
    let rc = *registered.get_or_init(|| unsafe { register_once(access) });
    if rc == ffi::SQLITE_OK {
        Ok(access.name())
    } else {
        Err(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!("registering SQLite's VFS {} failed", access.name())),
        ))
    }
}

/// # Safety
/// Call once per flavour (it leaks the VFS it registers).
unsafe fn register_once(flavour: Access) -> c_int {
    let root = match flavour.root() {
        // SAFETY: `sqlite3_vfs_find` initialises SQLite if needed; the VFS
        // it answers lives as long as the process.
        Some(name) => unsafe { ffi::sqlite3_vfs_find(name.as_ptr()) },
        // SAFETY: as above; a null name asks for the default VFS.
        None => unsafe { ffi::sqlite3_vfs_find(ptr::null()) },
    };
    if root.is_null() {
        return ffi::SQLITE_ERROR;
    }
    // SAFETY: `root` is a registered VFS.
    let (os_file, max_path) = unsafe { ((*root).szOsFile, (*root).mxPathname) };
    let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
        iVersion: 2,
        szOsFile: INNER_AT as c_int + os_file,
        mxPathname: max_path,
        pNext: ptr::null_mut(),
        zName: flavour.c_name().as_ptr(),
        pAppData: root.cast(),
        xOpen: Some(open),
        xDelete: Some(delete),
        xAccess: Some(access),
        xFullPathname: Some(full_pathname),
        xDlOpen: Some(dl_open),
        xDlError: Some(dl_error),
        xDlSym: Some(dl_sym),
        xDlClose: Some(dl_close),
        xRandomness: Some(randomness),
        xSleep: Some(sleep),
        xCurrentTime: Some(current_time),
        xGetLastError: Some(get_last_error),
        xCurrentTimeInt64: Some(current_time_int64),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    }));
    // SAFETY: the VFS is leaked, so it outlives every connection.
    unsafe { ffi::sqlite3_vfs_register(vfs, 0) }
}

/// A log file: this module's methods, its batch, and the platform's file.
#[repr(C)]
struct LogFile {
    /// First, as SQLite reads it: `pMethods` is [`LOG_METHODS`].
    base: ffi::sqlite3_file,
    /// The platform's file, [`INNER_AT`] bytes into the same allocation.
    inner: *mut ffi::sqlite3_file,
    batch: Batch,
}

/// Where the platform's file starts in a log's allocation (8-aligned, as
/// SQLite's allocations are).
const INNER_AT: usize = std::mem::size_of::<LogFile>().next_multiple_of(8);

/// The platform's VFS under ours.
///
/// # Safety
/// `vfs` is the VFS [`register_once`] made.
unsafe fn root(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: the caller's promise; `pAppData` is the platform's VFS.
    unsafe { (*vfs).pAppData.cast() }
}

unsafe extern "C" fn open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite calls this with our VFS and an allocation of our
    // `szOsFile` bytes: room for the platform's file alone, or for a
    // `LogFile` and the platform's file after it.
    unsafe {
        let root = root(vfs);
        let Some(open) = (*root).xOpen else {
            (*file).pMethods = ptr::null();
            return ffi::SQLITE_CANTOPEN;
        };
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            return open(root, name, file, flags, out_flags);
        }
        let inner = file.cast::<u8>().add(INNER_AT).cast::<ffi::sqlite3_file>();
        let rc = open(root, name, inner, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            // SQLite closes a file whose open failed if it has methods; it
            // sees only ours (none), so the platform's is closed here.
            if let Some(close) = (*inner).pMethods.as_ref().and_then(|m| m.xClose) {
                close(inner);
            }
            (*file).pMethods = ptr::null();
            return rc;
        }
        file.cast::<LogFile>().write(LogFile {
            base: ffi::sqlite3_file {
                pMethods: &LOG_METHODS,
            },
            inner,
            batch: Batch::default(),
        });
        ffi::SQLITE_OK
    }
}

/// The VFS's other methods: the platform's, called with the platform's VFS.
macro_rules! forward_vfs {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(vfs: *mut ffi::sqlite3_vfs, $($arg: $ty),*) -> $ret {
            // SAFETY: SQLite calls this with our VFS; the platform's method
            // gets the platform's VFS and SQLite's arguments.
            unsafe {
                let root = root(vfs);
                match (*root).$field {
                    Some(f) => f(root, $($arg),*),
                    None => $missing,
                }
            }
        }
    };
}

type DlSym = Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>;

forward_vfs!(delete, xDelete, (name: *const c_char, sync_dir: c_int) -> c_int, ffi::SQLITE_IOERR_DELETE);
forward_vfs!(access, xAccess, (name: *const c_char, flags: c_int, out: *mut c_int) -> c_int, ffi::SQLITE_IOERR_ACCESS);
forward_vfs!(full_pathname, xFullPathname, (name: *const c_char, n: c_int, out: *mut c_char) -> c_int, ffi::SQLITE_CANTOPEN);
forward_vfs!(dl_open, xDlOpen, (name: *const c_char) -> *mut c_void, ptr::null_mut());
forward_vfs!(dl_error, xDlError, (n: c_int, out: *mut c_char) -> (), ());
forward_vfs!(dl_sym, xDlSym, (handle: *mut c_void, symbol: *const c_char) -> DlSym, None);
forward_vfs!(dl_close, xDlClose, (handle: *mut c_void) -> (), ());
forward_vfs!(randomness, xRandomness, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(sleep, xSleep, (micros: c_int) -> c_int, 0);
forward_vfs!(current_time, xCurrentTime, (out: *mut f64) -> c_int, ffi::SQLITE_ERROR);
forward_vfs!(get_last_error, xGetLastError, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(current_time_int64, xCurrentTimeInt64, (out: *mut ffi::sqlite3_int64) -> c_int, ffi::SQLITE_ERROR);

/// A log's methods (version 1: SQLite maps and locks the database file,
/// never its log).
static LOG_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(log_close),
    xRead: Some(log_read),
    xWrite: Some(log_write),
    xTruncate: Some(log_truncate),
    xSync: Some(log_sync),
    xFileSize: Some(log_file_size),
    xLock: Some(log_lock),
    xUnlock: Some(log_unlock),
    xCheckReservedLock: Some(log_check_reserved_lock),
    xFileControl: Some(log_file_control),
    xSectorSize: Some(log_sector_size),
    xDeviceCharacteristics: Some(log_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// The platform's write of `data` at `offset` to `inner`.
///
/// # Safety
/// `inner` is an open platform file.
unsafe fn write_inner(inner: *mut ffi::sqlite3_file, data: &[u8], offset: i64) -> c_int {
    #[cfg(test)]
    tests::LOG_WRITES.with(|writes| writes.set(writes.get() + 1));
    // SAFETY: the caller's promise; `data` is valid for its length, which
    // a batch keeps far below `c_int::MAX`.
    unsafe {
        match (*(*inner).pMethods).xWrite {
            Some(write) => write(inner, data.as_ptr().cast(), data.len() as c_int, offset),
            None => ffi::SQLITE_IOERR_WRITE,
        }
    }
}

/// Writes what `file`'s batch holds.
///
/// # Safety
/// `file` is a [`LogFile`] that [`open`] made.
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: the caller's promise; SQLite never calls one file's methods
    // from two threads at once.
    unsafe {
        let log = &mut *file.cast::<LogFile>();
        let inner = log.inner;
        log.batch
            .flush(&mut |data, offset| write_inner(inner, data, offset))
    }
}

unsafe extern "C" fn log_write(
    file: *mut ffi::sqlite3_file,
    data: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: SQLite calls a log's methods with the `LogFile` `open` made,
    // never from two threads at once, and `data` holds `amount` bytes.
    unsafe {
        let log = &mut *file.cast::<LogFile>();
        let inner = log.inner;
        let data = std::slice::from_raw_parts(data.cast::<u8>(), amount.max(0) as usize);
        log.batch.write(data, offset, &mut |data, offset| {
            write_inner(inner, data, offset)
        })
    }
}

unsafe extern "C" fn log_close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `log_write`; SQLite calls nothing on the file after this.
    unsafe {
        let written = flush(file);
        let log = file.cast::<LogFile>();
        let inner = (*log).inner;
        let closed = match (*(*inner).pMethods).xClose {
            Some(close) => close(inner),
            None => ffi::SQLITE_OK,
        };
        ptr::drop_in_place(log);
        if written != ffi::SQLITE_OK {
            written
        } else {
            closed
        }
    }
}

/// A log's other methods: what the batch holds is written first, then the
/// platform's method runs.
macro_rules! forward_log {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
            // SAFETY: as `log_write`.
            unsafe {
                let rc = flush(file);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let inner = (*file.cast::<LogFile>()).inner;
                match (*(*inner).pMethods).$field {
                    Some(f) => f(inner, $($arg),*),
                    None => ffi::SQLITE_IOERR,
                }
            }
        }
    };
}

forward_log!(log_read, xRead, (buf: *mut c_void, amount: c_int, offset: ffi::sqlite3_int64));
forward_log!(log_truncate, xTruncate, (size: ffi::sqlite3_int64));
forward_log!(log_sync, xSync, (flags: c_int));
forward_log!(log_file_size, xFileSize, (size: *mut ffi::sqlite3_int64));
forward_log!(log_lock, xLock, (level: c_int));
forward_log!(log_unlock, xUnlock, (level: c_int));
forward_log!(log_check_reserved_lock, xCheckReservedLock, (out: *mut c_int));
forward_log!(log_file_control, xFileControl, (op: c_int, arg: *mut c_void));

unsafe extern "C" fn log_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `log_write`.
    unsafe {
        let inner = (*file.cast::<LogFile>()).inner;
        (*(*inner).pMethods).xSectorSize.map_or(4096, |f| f(inner))
    }
}

unsafe extern "C" fn log_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: as `log_write`.
    unsafe {
        let inner = (*file.cast::<LogFile>()).inner;
        (*(*inner).pMethods)
            .xDeviceCharacteristics
            .map_or(0, |f| f(inner))
    }
}

#[cfg(test)]
mod tests;
