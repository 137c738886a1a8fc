//! Group commit: the small, hot write transactions of concurrent drain steps (a try recorded
//! before its request leaves, a PAC answer's evidence, a CFDI, a fenced verdict) share one
//! durable `BEGIN IMMEDIATE … COMMIT` instead of paying one fsync each and fighting for the
//! write lock through SQLite's sleeping busy handler.
//!
//! How: one OS thread owns the writer connection (`rusqlite`, the same SQLite library sqlx
//! links, with the pool's pragmas: WAL, `synchronous=FULL`, busy timeout, foreign keys, and its
//! statements prepared once). A caller sends its write — a synchronous closure over that
//! connection — to the thread as a job and waits for its own answer. The thread takes every
//! job queued (at most [`MAX_GROUP`]) and runs them as one group, start to end, without
//! leaving the thread: `BEGIN IMMEDIATE`, each job inside its own `SAVEPOINT` (a job that fails
//! rolls back only itself), one `COMMIT`, and only then each caller gets its answer. While a
//! group commits, the next one gathers in the channel. A lone job is the whole transaction (no
//! savepoint). A group is one message to the thread and one answer back per caller, where
//! sqlx's worker thread took a message and an answer per statement.
//!
//! Invariants: a caller is answered `Ok` only after the commit that holds its write is durable
//! (`synchronous=FULL`), so "the try is recorded before the request leaves" and "evidence
//! before state" hold exactly as with one transaction per write: a caller submits its next
//! write only after the previous one is answered. A failed commit answers every job of the
//! group with the error; nothing of the group is written. A caller that stops waiting does not
//! cut its group short: the thread runs the group whole.

use std::any::Any;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use crate::error::{OutboxError, Result};

/// The most jobs one group runs (the rest wait for the next group).
const MAX_GROUP: usize = 256;

/// How many prepared statements the writer keeps (the drain's writes and the group's control).
const STATEMENT_CACHE: usize = 64;

type Output = Result<Box<dyn Any + Send>>;
type Run = Box<dyn FnOnce(&Connection) -> rusqlite::Result<Box<dyn Any + Send>> + Send>;
type Classify = Arc<dyn Fn(rusqlite::Error) -> OutboxError + Send + Sync>;

struct Job {
    run: Run,
    answer: oneshot::Sender<Output>,
}

enum Message {
    Job(Job),
    /// Close the connection, then answer.
    Close(oneshot::Sender<()>),
}

/// The writer thread of one database's group commits.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    jobs: mpsc::Sender<Message>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Opens the writer connection on `path` (which exists: the pool opened it first, in WAL)
    /// and starts its thread.
    pub(crate) fn open(path: &Path, busy_timeout: Duration, classify: Classify) -> Result<GroupCommit> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .and_then(|conn| {
                // The pragmas sqlx sets on the pool's connections (`SqliteConnectOptions`).
                conn.busy_timeout(busy_timeout)?;
                conn.execute_batch(sql!("writer_pragmas"))?;
                conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
                Ok(conn)
            })
            .map_err(|e| classify(e))?;
        let (jobs, queue) = mpsc::channel();
        std::thread::Builder::new()
            .name("timbra-sqlite-writer".into())
            .spawn(move || writer(conn, queue, classify))
            .map_err(|e| OutboxError::Database(format!("no se pudo iniciar el escritor de SQLite: {e}")))?;
        Ok(GroupCommit { jobs })
    }

    /// Closes the writer connection (after the group it is running, if any).
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.jobs.send(Message::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }

    /// Runs `f` inside a shared durable transaction; its answer once that transaction is
    /// committed (or its own error, with nothing of it written).
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (answer, got) = oneshot::channel();
        let run: Run = Box::new(move |conn| f(conn).map(|v| Box::new(v) as Box<dyn Any + Send>));
        self.jobs
            .send(Message::Job(Job { run, answer }))
            .map_err(|_| OutboxError::Database("la escritura compartida está cerrada".into()))?;
        let value = got
            .await
            .map_err(|_| OutboxError::Database("la transacción compartida se interrumpió sin respuesta".into()))??;
        value
            .downcast::<T>()
            .map(|b| *b)
            .map_err(|_| OutboxError::Database("respuesta de otro tipo en la transacción compartida".into()))
    }
}

/// The writer thread: a group per wake-up, until the store closes (or every sender is gone).
fn writer(conn: Connection, queue: mpsc::Receiver<Message>, classify: Classify) {
    while let Ok(first) = queue.recv() {
        let mut jobs = Vec::new();
        let mut close = None;
        match first {
            Message::Job(job) => jobs.push(job),
            Message::Close(done) => close = Some(done),
        }
        while close.is_none() && jobs.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(Message::Job(job)) => jobs.push(job),
                Ok(Message::Close(done)) => close = Some(done),
                Err(_) => break,
            }
        }
        if !jobs.is_empty() {
            commit_group(&conn, jobs, &classify);
        }
        if let Some(done) = close {
            // Writes sent after the close find the channel closed.
            drop(queue);
            drop(conn);
            let _ = done.send(());
            return;
        }
    }
}

fn commit_group(conn: &Connection, jobs: Vec<Job>, classify: &Classify) {
    // A transaction SQLite rolled back by itself (a full disk) may leave the connection's
    // bookkeeping behind; a transaction still open here is never ours to continue.
    if !conn.is_autocommit() {
        let _ = conn.execute_batch(sql!("writer_rollback"));
    }
    if let Err(e) = execute(conn, sql!("begin_write")) {
        return fail_all(jobs.into_iter().map(|j| j.answer), &classify(e));
    }
    // A lone job is the whole transaction: no savepoint, and its failure rolls back all.
    if jobs.len() == 1 {
        let Some(job) = jobs.into_iter().next() else { return };
        let answer = match (job.run)(conn) {
            Ok(v) => commit(conn).map(|()| v).map_err(|e| classify(e)),
            Err(e) => {
                let e = classify(e);
                rollback(conn);
                Err(e)
            }
        };
        let _ = job.answer.send(answer);
        return;
    }
    // Several: each job inside the savepoint `group_job`.
    let mut done: Vec<(oneshot::Sender<Output>, Output)> = Vec::with_capacity(jobs.len());
    if let Err(e) = execute(conn, sql!("group_savepoint")) {
        let e = classify(e);
        rollback(conn);
        return fail_all(jobs.into_iter().map(|j| j.answer), &e);
    }
    let mut jobs = jobs.into_iter().peekable();
    while let Some(job) = jobs.next() {
        let out = (job.run)(conn).map_err(|e| classify(e));
        let last = jobs.peek().is_none();
        let close = match (out.is_ok(), last) {
            (true, false) => sql!("group_keep_then_next"),
            (true, true) => sql!("group_keep"),
            (false, false) => sql!("group_undo_then_next"),
            (false, true) => sql!("group_undo"),
        };
        if let Err(e) = conn.execute_batch(close) {
            // When SQLite ended the whole transaction itself (a full disk), the job's own
            // error says why; otherwise the savepoint's.
            let e = match out {
                Err(job_error) if conn.is_autocommit() => job_error,
                _ => classify(e),
            };
            rollback(conn);
            fail_all(
                done.into_iter()
                    .map(|(a, _)| a)
                    .chain(std::iter::once(job.answer))
                    .chain(jobs.map(|j| j.answer)),
                &e,
            );
            return;
        }
        done.push((job.answer, out));
    }
    match commit(conn) {
        Ok(()) => {
            for (answer, out) in done {
                let _ = answer.send(out);
            }
        }
        Err(e) => fail_all(done.into_iter().map(|(a, _)| a), &classify(e)),
    }
}

/// One group-control statement, prepared once.
fn execute(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Commits; a commit that failed leaves nothing of the group behind.
fn commit(conn: &Connection) -> rusqlite::Result<()> {
    let done = execute(conn, sql!("writer_commit"));
    if done.is_err() {
        rollback(conn);
    }
    done
}

/// Rolls back what is still open (SQLite may have rolled it back already).
fn rollback(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch(sql!("writer_rollback"));
    }
}

fn fail_all(answers: impl IntoIterator<Item = oneshot::Sender<Output>>, e: &OutboxError) {
    for a in answers {
        let _ = a.send(Err(e.clone()));
    }
}
