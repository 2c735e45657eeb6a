//! The frames of one log file held back until their commit: the safe half
//! of the VFS, which `vfs.rs` calls with the platform's write.
//!
//! SQLite appends a frame to the log in two writes, its 24-byte header and
//! then its page, and a commit's frames one after the other; the last one's
//! header carries the database's size in pages, every other one zero
//! ("the WAL file format", sqlite.org/fileformat2.html#walformat). A
//! [`Batch`] holds each frame appended at the log's end and hands them all
//! to the platform in one write when the commit's frame is complete, before
//! the write returns to SQLite: SQLite publishes a commit to readers (the
//! wal-index's header) only after that, so no reader, checkpoint or
//! recovery can see a frame that is not in the file. Any other write (the
//! log's header, a page written again, a checksum rewritten) first writes
//! what is held, then itself; so does every other call on the file
//! (`vfs.rs`).

use std::ffi::c_int;

use rusqlite::ffi;

/// A frame's header in the log.
const FRAME_HEADER: usize = 24;
/// The log's own header, written at its start when it begins or restarts.
const LOG_HEADER: usize = 32;
/// The most a write may carry: the platform's VFS writes at most this much
/// of a buffer (SQLite itself never writes more than a frame at once; unix's
/// `seekAndWriteFd` masks the length with it) and reports a larger write as
/// a full disk. A commit larger than this is written as it goes, in frames
/// of at most this much.
const MAX_WRITE: usize = 0x1ffff;

/// Where the frames held back are, and where the log ends.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// Whole frames, in file order, from `held_at`.
    held: Vec<u8>,
    held_at: i64,
    /// A frame's header whose page has not come yet.
    header: Option<(i64, [u8; FRAME_HEADER])>,
    /// The log's end, when the last write is known to have appended to it:
    /// the log's header, or a whole new frame. `None` after anything else
    /// (a page or a checksum written again in place, a failed write): what
    /// follows it is not known to be an append.
    end: Option<i64>,
    /// A header written through just before, whose page may follow.
    header_through: Option<i64>,
}

impl Batch {
    /// Takes a write of `data` at `offset`: holds it (a frame appended at
    /// the log's end), or writes what is held and then it through `out`.
    /// Answers SQLite's result code.
    pub(crate) fn write(
        &mut self,
        data: &[u8],
        offset: i64,
        out: &mut impl FnMut(&[u8], i64) -> c_int,
    ) -> c_int {
        if data.len() == FRAME_HEADER && self.header.is_none() && self.end == Some(offset) {
            let mut header = [0; FRAME_HEADER];
            header.copy_from_slice(data);
            self.header = Some((offset, header));
            return ffi::SQLITE_OK;
        }
        if let Some((at, header)) = self.header {
            if offset == at + FRAME_HEADER as i64 {
                self.header = None;
                if self.held.len() + FRAME_HEADER + data.len() > MAX_WRITE {
                    let rc = self.flush(out);
                    if rc != ffi::SQLITE_OK {
                        return rc;
                    }
                }
                self.hold(at, &header);
                self.hold(offset, data);
                // Bytes 4..8: the database's size after a commit, else 0.
                let commit = header[4..8] != [0; 4];
                if commit {
                    return self.flush(out);
                }
                return ffi::SQLITE_OK;
            }
        }
        let rc = self.flush(out);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let rc = out(data, offset);
        let appended = match data.len() {
            LOG_HEADER => offset == 0,
            FRAME_HEADER => false,
            _ => self.header_through == Some(offset - FRAME_HEADER as i64),
        };
        self.header_through = (data.len() == FRAME_HEADER).then_some(offset);
        self.end = (rc == ffi::SQLITE_OK && appended).then_some(offset + data.len() as i64);
        rc
    }

    /// Writes what is held (a header without its page too) through `out`.
    pub(crate) fn flush(&mut self, out: &mut impl FnMut(&[u8], i64) -> c_int) -> c_int {
        if let Some((at, header)) = self.header.take() {
            self.hold(at, &header);
        }
        if self.held.is_empty() {
            return ffi::SQLITE_OK;
        }
        debug_assert!(self.held.len() <= MAX_WRITE);
        let rc = out(&self.held, self.held_at);
        self.held.clear();
        if rc != ffi::SQLITE_OK {
            // What follows a failed write is not an append SQLite expects.
            self.end = None;
        }
        rc
    }

    /// Whether anything is held.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.held.is_empty() && self.header.is_none()
    }

    fn hold(&mut self, offset: i64, data: &[u8]) {
        if self.held.is_empty() {
            self.held_at = offset;
        }
        debug_assert_eq!(self.held_at + self.held.len() as i64, offset);
        self.held.extend_from_slice(data);
        self.end = Some(offset + data.len() as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 4096;
    const FRAME: i64 = (FRAME_HEADER + PAGE) as i64;

    /// The writes that reach the platform.
    #[derive(Default)]
    struct Disk {
        writes: Vec<(i64, usize)>,
        file: Vec<u8>,
        fail: bool,
    }

    impl Disk {
        fn out(&mut self) -> impl FnMut(&[u8], i64) -> c_int + '_ {
            |data, offset| {
                if self.fail {
                    return ffi::SQLITE_IOERR_WRITE;
                }
                self.writes.push((offset, data.len()));
                let end = offset as usize + data.len();
                if self.file.len() < end {
                    self.file.resize(end, 0);
                }
                self.file[offset as usize..end].copy_from_slice(data);
                ffi::SQLITE_OK
            }
        }
    }

    fn header(commit_pages: u32, n: u8) -> [u8; FRAME_HEADER] {
        let mut h = [n; FRAME_HEADER];
        h[4..8].copy_from_slice(&commit_pages.to_be_bytes());
        h
    }

    /// The writes SQLite makes to append `frames` frames from frame
    /// `first` (1-based), the last one a commit when `commit`.
    fn frames(first: i64, frames: u8, commit: bool) -> Vec<(i64, Vec<u8>)> {
        let mut writes = Vec::new();
        for i in 0..frames {
            let at = LOG_HEADER as i64 + (first - 1 + i64::from(i)) * FRAME;
            let last = commit && i + 1 == frames;
            let n = first as u8 + i;
            writes.push((at, header(if last { 9 } else { 0 }, n).to_vec()));
            writes.push((at + FRAME_HEADER as i64, vec![n; PAGE]));
        }
        writes
    }

    fn append(batch: &mut Batch, disk: &mut Disk, first: i64, n: u8, commit: bool) {
        for (at, data) in frames(first, n, commit) {
            assert_eq!(batch.write(&data, at, &mut disk.out()), ffi::SQLITE_OK);
        }
    }

    fn started() -> (Batch, Disk) {
        let (mut batch, mut disk) = (Batch::default(), Disk::default());
        assert_eq!(
            batch.write(&[7; LOG_HEADER], 0, &mut disk.out()),
            ffi::SQLITE_OK
        );
        (batch, disk)
    }

    #[test]
    fn a_commit_s_frames_reach_the_file_in_one_write_when_its_last_page_comes() {
        let (mut batch, mut disk) = started();
        assert_eq!(
            disk.writes,
            vec![(0, LOG_HEADER)],
            "the log's header is written through"
        );
        append(&mut batch, &mut disk, 1, 3, false);
        assert_eq!(disk.writes.len(), 1, "frames before the commit's are held");
        append(&mut batch, &mut disk, 4, 1, true);
        assert_eq!(
            disk.writes,
            vec![(0, LOG_HEADER), (LOG_HEADER as i64, 4 * FRAME as usize)]
        );
        assert!(batch.is_empty());
        // The next transaction appends after it, held again.
        append(&mut batch, &mut disk, 5, 2, true);
        assert_eq!(disk.writes.len(), 3);
        assert_eq!(
            disk.writes[2],
            (LOG_HEADER as i64 + 4 * FRAME, 2 * FRAME as usize)
        );
        // Byte for byte what the frames written one call at a time make.
        let mut plain = Disk::default();
        let mut out = plain.out();
        out(&[7; LOG_HEADER], 0);
        for (at, data) in [frames(1, 3, false), frames(4, 1, true), frames(5, 2, true)].concat() {
            out(&data, at);
        }
        drop(out);
        let first_difference = disk.file.iter().zip(&plain.file).position(|(a, b)| a != b);
        assert_eq!(
            (disk.file.len(), first_difference),
            (plain.file.len(), None)
        );
    }

    #[test]
    fn a_write_elsewhere_writes_what_is_held_first_and_goes_through() {
        let (mut batch, mut disk) = started();
        append(&mut batch, &mut disk, 1, 2, false);
        // A page of this transaction written again in place (SQLite's
        // overwrite of a frame it spilled earlier).
        let page_one = LOG_HEADER as i64 + FRAME_HEADER as i64;
        assert_eq!(
            batch.write(&[9; PAGE], page_one, &mut disk.out()),
            ffi::SQLITE_OK
        );
        assert_eq!(
            disk.writes[1..],
            [(LOG_HEADER as i64, 2 * FRAME as usize), (page_one, PAGE)],
            "the held frames, then the page in place"
        );
        assert!(batch.is_empty());
        // What follows a page written in place is not an append, though it
        // is where the next frame starts (a checksum rewritten there).
        let frame_two = LOG_HEADER as i64 + FRAME;
        assert_eq!(
            batch.write(&header(0, 0xEE), frame_two, &mut disk.out()),
            ffi::SQLITE_OK
        );
        assert!(batch.is_empty(), "written through");
        // A new frame at the log's end, header and page, is an append: the
        // next one is held again.
        append(&mut batch, &mut disk, 3, 2, false);
        assert_eq!(
            disk.writes[4..],
            [
                (LOG_HEADER as i64 + 2 * FRAME, FRAME_HEADER),
                (LOG_HEADER as i64 + 2 * FRAME + FRAME_HEADER as i64, PAGE)
            ]
        );
        assert!(!batch.is_empty());
    }

    #[test]
    fn a_checksum_rewritten_in_place_is_never_held() {
        let (mut batch, mut disk) = started();
        append(&mut batch, &mut disk, 1, 3, true);
        // After the commit, SQLite rewrites the headers of the frames it
        // overwrote (their checksums), the commit's header last. Were one
        // held, the commit would be published before its checksum is in
        // the file.
        for i in 0..3 {
            let at = LOG_HEADER as i64 + i * FRAME;
            let h = header(if i == 2 { 9 } else { 0 }, 0xEE);
            assert_eq!(batch.write(&h, at, &mut disk.out()), ffi::SQLITE_OK);
            assert!(batch.is_empty(), "header {i} went through");
        }
        assert_eq!(disk.writes.len(), 2 + 3);
        // Then the next transaction's first frame (after a header written in
        // place, the end is not known): written through, the rest held.
        append(&mut batch, &mut disk, 4, 3, true);
        assert_eq!(
            disk.writes[5..],
            [
                (LOG_HEADER as i64 + 3 * FRAME, FRAME_HEADER),
                (LOG_HEADER as i64 + 3 * FRAME + FRAME_HEADER as i64, PAGE),
                (LOG_HEADER as i64 + 4 * FRAME, 2 * FRAME as usize),
            ]
        );
    }

    #[test]
    fn a_header_whose_page_does_not_follow_is_written_before_anything_else() {
        let (mut batch, mut disk) = started();
        append(&mut batch, &mut disk, 1, 1, false);
        let at = LOG_HEADER as i64 + FRAME;
        assert_eq!(
            batch.write(&header(0, 1), at, &mut disk.out()),
            ffi::SQLITE_OK
        );
        assert!(!batch.is_empty());
        assert_eq!(batch.flush(&mut disk.out()), ffi::SQLITE_OK);
        assert_eq!(
            disk.writes[1..],
            [(LOG_HEADER as i64, FRAME as usize + FRAME_HEADER)]
        );
        assert!(batch.is_empty());
    }

    #[test]
    fn a_long_transaction_is_written_as_it_goes_no_write_larger_than_the_platform_s() {
        let (mut batch, mut disk) = started();
        let per_write = MAX_WRITE / FRAME as usize;
        append(&mut batch, &mut disk, 1, 2 * per_write as u8 + 1, true);
        assert_eq!(
            disk.writes[1..],
            [
                (LOG_HEADER as i64, per_write * FRAME as usize),
                (
                    LOG_HEADER as i64 + per_write as i64 * FRAME,
                    per_write * FRAME as usize
                ),
                (
                    LOG_HEADER as i64 + 2 * per_write as i64 * FRAME,
                    FRAME as usize
                ),
            ]
        );
        assert!(batch.is_empty());
    }

    #[test]
    fn a_failed_write_is_answered_and_nothing_stays_held() {
        let (mut batch, mut disk) = started();
        append(&mut batch, &mut disk, 1, 2, false);
        disk.fail = true;
        let at = LOG_HEADER as i64 + 2 * FRAME;
        assert_eq!(
            batch.write(&header(9, 2), at, &mut disk.out()),
            ffi::SQLITE_OK
        );
        assert_eq!(
            batch.write(&[2; PAGE], at + FRAME_HEADER as i64, &mut disk.out()),
            ffi::SQLITE_IOERR_WRITE
        );
        assert!(batch.is_empty());
        // After a failure nothing is held until the log's end is known again.
        disk.fail = false;
        let next = at + FRAME;
        assert_eq!(
            batch.write(&header(0, 3), next, &mut disk.out()),
            ffi::SQLITE_OK
        );
        assert_eq!(disk.writes.last(), Some(&(next, FRAME_HEADER)));
    }
}
