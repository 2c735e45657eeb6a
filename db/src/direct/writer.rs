//! The direct connection's writes, combined: whoever writes runs every
//! write queued at that moment in one transaction.
//!
//! A turn writes several times (its start, its checkpoints, its end), and
//! under load many turns write at once. Run one at a time, each write is a
//! commit of its own: the pages it shares with the others (the tables'
//! last pages, the indexes' by time) are written to the log again by each
//! commit, and every writer waits its turn for the connection. Here a
//! write is a job in a queue instead:
//!
//! - A caller that finds nobody writing runs the queue itself, in its own
//!   thread, at once (a lone write costs what it did before: one
//!   transaction, no hop to another task).
//! - A caller that finds a write in progress leaves its job and waits for
//!   its answer. When the write in progress ends, a combiner task takes
//!   every job queued meanwhile (up to [`JOBS_PER_BATCH`]) into the next
//!   transaction, and so on until the queue is empty.
//!
//! A shared transaction first runs its jobs one after the other, each
//! seeing what the earlier ones wrote, as if they had committed one after
//! the other. When all of them keep their writes (as nearly every batch
//! does) it commits. When one does not, the transaction is rolled back and
//! run again with each job inside a savepoint of its own: a job that fails
//! or decides to roll back ([`Keep::RollBack`]) then undoes its own
//! statements and nothing else. (A savepoint for every job every time
//! copied each page a job first changed; BENCHMARKS.md, round 33.) Every
//! caller is answered only once the transaction committed, so a write is as
//! durable when its caller hears back as if it had been written alone. A
//! transaction that fails as a whole (its commit, or an error after which
//! SQLite rolled it back) is not the callers' answer: each of its jobs is
//! run again alone, and answered with its own outcome.
//!
//! A job may run more than once (above, and when another connection holds
//! the write lock: the combiner tries again after a pause, as
//! [`super::Direct`]'s reads do, up to [`BUSY_TIMEOUT`] after the job was
//! queued). A job whose caller stopped waiting before it ran is dropped
//! unrun. A job that panics rolls back its savepoint, and the panic goes
//! on in its caller's task, not the combiner's.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{oneshot, Mutex};

use super::tx::{Begin, Tx};
use super::{is_busy, Keep, BUSY_TIMEOUT, FIRST_PAUSE, MAX_PAUSE};
use crate::DbError;

/// Jobs per transaction: enough for every turn of a busy server to share
/// one commit, few enough that one transaction holds the database briefly.
const JOBS_PER_BATCH: usize = 64;

type Value = Box<dyn Any + Send>;
type Work = Box<dyn FnMut(&Tx<'_>) -> Result<Keep<Value>, DbError> + Send>;

/// What a caller hears back.
enum Answer {
    Done(Result<Value, DbError>),
    /// The job panicked: the payload, to go on in the caller's task.
    Panicked(Box<dyn Any + Send>),
}

/// One caller's write.
struct Job {
    work: Work,
    done: oneshot::Sender<Answer>,
    /// When it was queued: it waits for another connection's write lock
    /// up to [`BUSY_TIMEOUT`] from here.
    since: Instant,
}

impl Job {
    fn answer(self, answer: Answer) {
        // A caller that stopped waiting hears nothing.
        let _ = self.done.send(answer);
    }

    /// Runs the job's body, a panic caught.
    fn run(&mut self, tx: &Tx<'_>) -> Outcome {
        match catch_unwind(AssertUnwindSafe(|| (self.work)(tx))) {
            Ok(Ok(Keep::Commit(value))) => Outcome::Commit(value),
            Ok(Ok(Keep::RollBack(value))) => Outcome::RollBack(Ok(value)),
            Ok(Err(DbError::Sqlite(e))) if is_busy(&e) => Outcome::Busy(e),
            Ok(Err(e)) => Outcome::RollBack(Err(e)),
            Err(payload) => Outcome::Panicked(payload),
        }
    }

    /// The job found the write lock taken: it is tried again, unless it
    /// has waited long enough (then that is its answer).
    fn busy(self, e: rusqlite::Error) -> Option<Job> {
        if self.since.elapsed() < BUSY_TIMEOUT {
            return Some(self);
        }
        self.answer(Answer::Done(Err(e.into())));
        None
    }
}

/// What one run of a job's body decided.
enum Outcome {
    /// Keep what it wrote; answer this once committed.
    Commit(Value),
    /// Undo what it wrote; answer this (a value, or its error).
    RollBack(Result<Value, DbError>),
    /// Another connection holds a lock it needs: undo, try again later.
    Busy(rusqlite::Error),
    Panicked(Box<dyn Any + Send>),
}

impl Outcome {
    fn answer(self) -> Answer {
        match self {
            Self::Commit(value) => Answer::Done(Ok(value)),
            Self::RollBack(result) => Answer::Done(result),
            Self::Busy(e) => Answer::Done(Err(e.into())),
            Self::Panicked(payload) => Answer::Panicked(payload),
        }
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Someone runs the queue (a caller in its thread, or the combiner
    /// task): a new job waits for them.
    running: bool,
}

/// The write side of one direct connection.
pub(super) struct Writer {
    /// `None` once the database is closed. Held for one transaction or
    /// batch, which never awaits: the lock is only ever waited for, never
    /// held, across an `.await` (the log's rewind and the close take it
    /// too, and an in-memory database's reads).
    pub(super) conn: Arc<Mutex<Option<Connection>>>,
    queue: StdMutex<Queue>,
}

impl Writer {
    pub(super) fn new(conn: Connection) -> Arc<Self> {
        Arc::new(Self {
            conn: Arc::new(Mutex::new(Some(conn))),
            queue: StdMutex::default(),
        })
    }

    /// Runs `f` in a write transaction, alone or beside other callers'
    /// jobs (module docs), and answers once that transaction committed.
    pub(super) async fn transact<T: Send + 'static>(
        self: &Arc<Self>,
        mut f: impl FnMut(&Tx<'_>) -> Result<Keep<T>, DbError> + Send + 'static,
    ) -> Result<T, DbError> {
        let (done, answer) = oneshot::channel();
        self.submit(Job {
            work: Box::new(move |tx| {
                Ok(match f(tx)? {
                    Keep::Commit(value) => Keep::Commit(Box::new(value) as Value),
                    Keep::RollBack(value) => Keep::RollBack(Box::new(value) as Value),
                })
            }),
            done,
            since: Instant::now(),
        });
        match answer.await {
            Ok(Answer::Done(result)) => result.and_then(|value| {
                value.downcast::<T>().map(|value| *value).map_err(|_| {
                    DbError::Corrupt("a write was answered with another's value".into())
                })
            }),
            Ok(Answer::Panicked(payload)) => std::panic::resume_unwind(payload),
            Err(_) => Err(DbError::Corrupt(
                "the database writer stopped before it answered".into(),
            )),
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `job`; runs the queue in this thread when nobody else does
    /// and the connection is free, else leaves it to whoever runs it (a
    /// combiner task, started when there is none).
    fn submit(self: &Arc<Self>, job: Job) {
        let mut queue = self.queue();
        queue.jobs.push_back(job);
        if queue.running {
            return;
        }
        queue.running = true;
        let Ok(mut conn) = self.conn.try_lock() else {
            // A read (in memory), the log's rewind or the close holds the
            // connection: the combiner waits for it as a task.
            drop(queue);
            self.combine(None);
            return;
        };
        let batch = take(&mut queue.jobs);
        drop(queue);
        let back = run(conn.as_mut(), batch);
        drop(conn);
        let mut queue = self.queue();
        let busy = !back.is_empty();
        put_back(&mut queue.jobs, back);
        if queue.jobs.is_empty() {
            queue.running = false;
        } else {
            drop(queue);
            self.combine(busy.then_some(FIRST_PAUSE));
        }
    }

    /// Starts the combiner task, which runs the queue until it is empty
    /// (after `pause`, when the write lock was just found taken).
    fn combine(self: &Arc<Self>, pause: Option<Duration>) {
        let writer = self.clone();
        tokio::spawn(async move { writer.combiner(pause).await });
    }

    async fn combiner(self: Arc<Self>, mut pause: Option<Duration>) {
        let mut running = Running {
            writer: &self,
            ended: false,
        };
        loop {
            if let Some(pause) = pause {
                tokio::time::sleep(pause).await;
            }
            let mut conn = self.conn.lock().await;
            let batch = {
                let mut queue = self.queue();
                if queue.jobs.is_empty() {
                    queue.running = false;
                    running.ended = true;
                    return;
                }
                take(&mut queue.jobs)
            };
            let back = run(conn.as_mut(), batch);
            drop(conn);
            pause = if back.is_empty() {
                None
            } else {
                Some(pause.map_or(FIRST_PAUSE, |p| (p * 2).min(MAX_PAUSE)))
            };
            put_back(&mut self.queue().jobs, back);
            if pause.is_none() {
                // Let the callers just answered run (and queue their next
                // writes) before the next batch.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// The combiner task's mark: a task dropped before it ended (its runtime
/// shut down while it waited) leaves the queue to the next write, which
/// starts another.
struct Running<'a> {
    writer: &'a Writer,
    ended: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.writer.queue().running = false;
        }
    }
}

/// The next batch: the queue's first jobs whose callers still wait.
fn take(jobs: &mut VecDeque<Job>) -> Vec<Job> {
    let mut batch = Vec::with_capacity(jobs.len().min(JOBS_PER_BATCH));
    while batch.len() < JOBS_PER_BATCH {
        let Some(job) = jobs.pop_front() else { break };
        if !job.done.is_closed() {
            batch.push(job);
        }
    }
    batch
}

/// Jobs to try again go back to the queue's front, in their order.
fn put_back(jobs: &mut VecDeque<Job>, back: Vec<Job>) {
    for job in back.into_iter().rev() {
        jobs.push_front(job);
    }
}

/// Runs `batch` on `conn` (`None`: closed) and answers its callers;
/// returns the jobs to try again (the write lock was taken).
fn run(conn: Option<&mut Connection>, batch: Vec<Job>) -> Vec<Job> {
    let Some(conn) = conn else {
        for job in batch {
            job.answer(Answer::Done(Err(DbError::Sqlx(sqlx::Error::PoolClosed))));
        }
        return Vec::new();
    };
    if batch.len() == 1 {
        return each_alone(conn, batch);
    }
    shared(conn, batch)
}

/// One job in a transaction of its own; the job back when the write lock
/// was taken.
fn alone(conn: &mut Connection, mut job: Job) -> Option<Job> {
    let tx = match Tx::begin(conn, Begin::Immediate) {
        Ok(tx) => tx,
        Err(e) if is_busy(&e) => return job.busy(e),
        Err(e) => {
            job.answer(Answer::Done(Err(e.into())));
            return None;
        }
    };
    let answer = match job.run(&tx) {
        Outcome::Commit(value) => match tx.commit() {
            Ok(()) => Answer::Done(Ok(value)),
            Err(e) if is_busy(&e) => return job.busy(e),
            Err(e) => Answer::Done(Err(e.into())),
        },
        // Dropping the transaction rolls it back.
        Outcome::Busy(e) => return job.busy(e),
        outcome => outcome.answer(),
    };
    job.answer(answer);
    None
}

/// Several jobs in one transaction: first all of them plainly, and only
/// when one of them does not keep its writes, again each in a savepoint;
/// the jobs back when the write lock was taken.
fn shared(conn: &mut Connection, batch: Vec<Job>) -> Vec<Job> {
    let batch = match Tx::begin(conn, Begin::Immediate) {
        Ok(tx) => match plainly(tx, batch) {
            Ok(()) => return Vec::new(),
            Err(batch) => batch,
        },
        Err(e) if is_busy(&e) => {
            return batch
                .into_iter()
                .filter_map(|job| job.busy(clone_busy(&e)))
                .collect();
        }
        // The transaction below fails the same way, and runs each job
        // alone.
        Err(_) => batch,
    };
    let (mut back, again) = match Tx::begin(conn, Begin::Immediate) {
        Ok(tx) => together(tx, batch),
        Err(e) if is_busy(&e) => {
            return batch
                .into_iter()
                .filter_map(|job| job.busy(clone_busy(&e)))
                .collect();
        }
        // Each job alone, for its own answer.
        Err(_) => (Vec::new(), batch),
    };
    back.extend(each_alone(conn, again));
    back
}

/// Runs every job of `batch` in `tx`, none in a savepoint, and commits,
/// answering each, when all of them keep what they wrote: the common
/// case, and the cheap one. A savepoint copies each page its job is the
/// first to change (to put it back on a rollback), and the jobs of a batch
/// change the same few pages, the tables' and indexes' last ones: each
/// page copied once a job (BENCHMARKS.md, round 33). When one job does not
/// keep its writes (it rolls back, fails, panics or finds a lock taken),
/// or the commit fails, nothing of the transaction stands, and the batch
/// is given back unanswered to run again in savepoints ([`together`]).
fn plainly(tx: Tx<'_>, mut batch: Vec<Job>) -> Result<(), Vec<Job>> {
    let mut values = Vec::with_capacity(batch.len());
    for job in &mut batch {
        match job.run(&tx) {
            Outcome::Commit(value) if !tx.is_autocommit() => values.push(value),
            // Dropping the transaction rolls it back.
            _ => return Err(batch),
        }
    }
    if tx.commit().is_err() {
        return Err(batch);
    }
    for (job, value) in batch.into_iter().zip(values) {
        job.answer(Answer::Done(Ok(value)));
    }
    Ok(())
}

/// Runs `batch` in `tx`, each job in a savepoint, and commits it,
/// answering each job; returns the jobs to try again later (busy) and
/// those to run again alone now (the transaction failed as a whole).
fn together(tx: Tx<'_>, batch: Vec<Job>) -> (Vec<Job>, Vec<Job>) {
    let mut ran: Vec<(Job, Outcome)> = Vec::with_capacity(batch.len());
    let mut back = Vec::new();
    let mut jobs = batch.into_iter();
    while let Some(mut job) = jobs.next() {
        let outcome = match tx.savepoint() {
            Ok(()) => Some(job.run(&tx)),
            Err(_) => None,
        };
        let ended = match &outcome {
            Some(Outcome::Commit(_)) => tx.release(),
            Some(_) => tx.roll_back_savepoint(),
            None => Ok(()),
        };
        match outcome {
            Some(outcome) if ended.is_ok() && !tx.is_autocommit() => match outcome {
                Outcome::Busy(e) => back.extend(job.busy(e)),
                outcome => ran.push((job, outcome)),
            },
            outcome => {
                // The transaction is gone (SQLite rolls it back whole on
                // some errors) or its savepoints fail: nothing of it
                // stands. A job that failed on its own is answered; the
                // others run again, each alone.
                drop(tx);
                let mut again: Vec<Job> = ran.into_iter().map(|(job, _)| job).collect();
                match outcome {
                    Some(outcome @ (Outcome::RollBack(Err(_)) | Outcome::Panicked(_))) => {
                        job.answer(outcome.answer());
                    }
                    _ => again.push(job),
                }
                again.extend(jobs);
                return (back, again);
            }
        }
    }
    match tx.commit() {
        Ok(()) => {
            for (job, outcome) in ran {
                job.answer(outcome.answer());
            }
            (back, Vec::new())
        }
        // Rolled back: nothing it answered stands.
        Err(_) => (back, ran.into_iter().map(|(job, _)| job).collect()),
    }
}

fn each_alone(conn: &mut Connection, jobs: Vec<Job>) -> Vec<Job> {
    jobs.into_iter()
        .filter_map(|job| alone(conn, job))
        .collect()
}

/// A busy error for each job of a batch that found the lock taken.
fn clone_busy(e: &rusqlite::Error) -> rusqlite::Error {
    match e {
        rusqlite::Error::SqliteFailure(code, message) => {
            rusqlite::Error::SqliteFailure(*code, message.clone())
        }
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::super::Direct;
    use super::*;

    /// A direct connection to a new file with a table `t (n INTEGER
    /// UNIQUE)`; its folder, to remove.
    async fn direct() -> (PathBuf, Direct) {
        let dir =
            std::env::temp_dir().join(format!("aics-writer-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).expect("test folder");
        let direct = Direct::open(&dir.join("w.db"), aics_sqlite_vfs::Access::Shared)
            .expect("test database");
        direct
            .write(|tx| Ok(tx.execute_batch("CREATE TABLE t (n INTEGER UNIQUE)")?))
            .await
            .expect("test database");
        (dir, direct)
    }

    /// The frames in the log so far (each commit appends one a page it
    /// wrote).
    async fn frames(direct: &Direct) -> i64 {
        let conn = direct.writer.conn.lock().await;
        conn.as_ref()
            .expect("open")
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
            .expect("log")
    }

    async fn rows(direct: &Direct) -> Vec<i64> {
        direct
            .read(|tx| {
                let mut q = tx.prepare("SELECT n FROM t ORDER BY n")?;
                let rows = q.query_map([], |row| row.get(0))?;
                Ok(rows.collect::<Result<Vec<i64>, _>>()?)
            })
            .await
            .expect("read")
    }

    /// Callers that queue behind a write share the next transaction (one
    /// commit: a few pages in the log, not one commit a caller); each
    /// one's outcome is its own: one that fails (a duplicate) or rolls back
    /// undoes only its statements, and the others' rows are all there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_writes_share_a_transaction_and_keep_their_own_outcomes() {
        let (dir, direct) = direct().await;
        let direct = Arc::new(direct);
        let before = frames(&direct).await;
        // Holding the connection makes the next writes queue.
        let held = direct.writer.conn.clone().lock_owned().await;
        let mut callers = Vec::new();
        for n in 0..32_i64 {
            let direct = direct.clone();
            callers.push(tokio::spawn(async move {
                direct
                    .transact(move |tx| {
                        tx.execute("INSERT INTO t VALUES (?1)", [n])?;
                        match n {
                            // A duplicate of its own row (not of another
                            // caller's: the spawned callers queue in any
                            // order): fails, and undoes its first insert.
                            7 => {
                                tx.execute("INSERT INTO t VALUES (?1)", [n])?;
                                Ok(Keep::Commit("unreachable"))
                            }
                            9 => Ok(Keep::RollBack("rolled back")),
                            _ => Ok(Keep::Commit("kept")),
                        }
                    })
                    .await
            }));
        }
        // Every job is queued before the first batch runs (up to 5 s: the
        // spawned callers may wait for a worker in a busy run of the suite).
        for _ in 0..2_500 {
            if direct.writer.queue().jobs.len() == 32 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(direct.writer.queue().jobs.len(), 32);
        drop(held);
        let mut answers = Vec::new();
        for caller in callers {
            answers.push(caller.await.expect("a caller"));
        }
        assert!(
            matches!(answers[7], Err(DbError::Sqlite(_))),
            "{:?}",
            answers[7]
        );
        assert_eq!(answers[9].as_ref().ok(), Some(&"rolled back"));
        assert_eq!(answers[8].as_ref().ok(), Some(&"kept"));
        let expected: Vec<i64> = (0..32).filter(|n| *n != 7 && *n != 9).collect();
        assert_eq!(rows(&direct).await, expected);
        // 30 commits would have added 30 frames or more.
        let added = frames(&direct).await - before;
        assert!(
            added < 8,
            "{added} frames: the writes did not share a commit"
        );
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A batch whose jobs all keep their writes runs each of them once, with
    /// no savepoint. One in which a job rolls back (here the last) runs
    /// again, each job in a savepoint: every job runs twice, the kept rows
    /// are written once and the rolled-back one not at all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_runs_again_in_savepoints_only_when_a_job_rolls_back() {
        let (dir, direct) = direct().await;
        let direct = Arc::new(direct);
        for (base, roll_back) in [(0, false), (100, true)] {
            let runs: Arc<Vec<AtomicUsize>> =
                Arc::new((0..8).map(|_| AtomicUsize::new(0)).collect());
            let held = direct.writer.conn.clone().lock_owned().await;
            let mut callers = Vec::new();
            for n in 0..8_i64 {
                let (writer, runs) = (direct.clone(), runs.clone());
                callers.push(tokio::spawn(async move {
                    writer
                        .transact(move |tx| {
                            runs[n as usize].fetch_add(1, Ordering::SeqCst);
                            tx.execute("INSERT INTO t VALUES (?1)", [base + n])?;
                            Ok(if roll_back && n == 7 {
                                Keep::RollBack(n)
                            } else {
                                Keep::Commit(n)
                            })
                        })
                        .await
                }));
                // Queued in order, the last one last.
                for _ in 0..2_500 {
                    if direct.writer.queue().jobs.len() == n as usize + 1 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                assert_eq!(direct.writer.queue().jobs.len(), n as usize + 1);
            }
            drop(held);
            for (n, caller) in callers.into_iter().enumerate() {
                let answer = caller.await.expect("a caller").expect("answered");
                assert_eq!(answer, n as i64, "each caller hears its own outcome");
            }
            let runs: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
            assert_eq!(runs, [if roll_back { 2 } else { 1 }; 8]);
        }
        let expected: Vec<i64> = (0..8).chain(100..107).collect();
        assert_eq!(rows(&direct).await, expected);
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A job that panics rolls back its own statements and the panic goes
    /// on in its caller's task; the jobs beside it commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_job_fails_its_own_caller_only() {
        let (dir, direct) = direct().await;
        let direct = Arc::new(direct);
        let held = direct.writer.conn.clone().lock_owned().await;
        let mut callers = Vec::new();
        for n in 0..4_i64 {
            let direct = direct.clone();
            callers.push(tokio::spawn(async move {
                direct
                    .write(move |tx| {
                        tx.execute("INSERT INTO t VALUES (?1)", [n])?;
                        assert_ne!(n, 2, "the job of 2 panics");
                        Ok(())
                    })
                    .await
            }));
        }
        while direct.writer.queue().jobs.len() < 4 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        drop(held);
        let mut panicked = 0;
        for caller in callers {
            match caller.await {
                Ok(answer) => answer.expect("written"),
                Err(e) if e.is_panic() => panicked += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(panicked, 1);
        assert_eq!(rows(&direct).await, [0, 1, 3]);
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// While another connection holds the write lock, a write waits (as a
    /// task: the runtime's one worker runs other tasks meanwhile) and goes
    /// in once the lock is released; a job whose caller stopped waiting is
    /// never run.
    #[tokio::test(flavor = "current_thread")]
    async fn a_write_waits_for_another_connections_lock_and_a_dropped_one_never_runs() {
        let (dir, direct) = direct().await;
        let other = Connection::open(dir.join("w.db")).expect("test database");
        other.execute_batch("BEGIN IMMEDIATE").expect("the lock");
        let ran = Arc::new(AtomicUsize::new(0));
        let count = ran.clone();
        let gone = tokio::time::timeout(
            Duration::from_millis(20),
            direct.write(move |tx| {
                count.fetch_add(1, Ordering::SeqCst);
                Ok(tx.execute("INSERT INTO t VALUES (1)", [])?)
            }),
        )
        .await;
        assert!(gone.is_err(), "the write went in under another's lock");
        let waiting = direct.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (2)", [])?));
        let release = async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            other.execute_batch("ROLLBACK").expect("release");
        };
        let (written, ()) = tokio::join!(waiting, release);
        assert_eq!(written.expect("written"), 1);
        assert_eq!(rows(&direct).await, [2]);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "the abandoned write ran");
        direct.close().await;
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A combiner whose runtime shut down while it waited (a database
    /// shared by two runtimes, as in some tests) does not leave the next
    /// runtime's writes waiting for it.
    #[test]
    fn a_writer_whose_runtime_ended_starts_again_in_the_next() {
        let runtime = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime")
        };
        let first = runtime();
        let (dir, direct) = first.block_on(direct());
        let held = first.block_on(async {
            // The connection held: the write queues and its combiner waits.
            let held = direct.writer.conn.clone().lock_owned().await;
            let queued = direct.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (1)", [])?));
            let _ = tokio::time::timeout(Duration::from_millis(20), queued).await;
            held
        });
        drop(first);
        drop(held);
        let second = runtime();
        second.block_on(async {
            let written = tokio::time::timeout(
                Duration::from_secs(5),
                direct.write(|tx| Ok(tx.execute("INSERT INTO t VALUES (2)", [])?)),
            )
            .await
            .expect("the write waited for the ended runtime's combiner");
            assert_eq!(written.expect("written"), 1);
            assert_eq!(rows(&direct).await, [2]);
            direct.close().await;
        });
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_write_after_the_close_fails_as_on_a_closed_pool() {
        let (dir, direct) = direct().await;
        direct.close().await;
        let answer = direct.write(|_| Ok(())).await;
        assert!(
            matches!(answer, Err(DbError::Sqlx(sqlx::Error::PoolClosed))),
            "{answer:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
