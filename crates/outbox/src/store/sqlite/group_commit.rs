//! Group commit: the small, hot write transactions of concurrent drain steps (a try recorded
//! before its request leaves, a PAC answer's evidence, a CFDI, a fenced verdict) share one
//! durable `BEGIN IMMEDIATE … COMMIT` instead of paying one fsync each and fighting for the
//! write lock through SQLite's sleeping busy handler.
//!
//! How: a caller queues its write as a job and waits for its own answer. Whoever holds the one
//! leader permit takes every queued job and runs them in a spawned task (so a caller dropped
//! mid-group never cuts a group short) on the one writer connection: `BEGIN IMMEDIATE`, each
//! job inside its own `SAVEPOINT` (a job that fails rolls back only itself), one `COMMIT`, and
//! only then each caller gets its answer. While a group commits, the next one gathers. A lone
//! job is the whole transaction (no savepoint); between two jobs, releasing one savepoint and
//! opening the next is one multi-statement round trip to the writer's thread, not two.
//!
//! Invariants: a caller is answered `Ok` only after the commit that holds its write is durable
//! (`synchronous=FULL`), so "the try is recorded before the request leaves" and "evidence
//! before state" hold exactly as with one transaction per write: a caller submits its next
//! write only after the previous one is answered. A failed commit answers every job of the
//! group with the error; nothing of the group is written.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use sqlx::sqlite::SqlitePool;
use sqlx::{Connection, SqliteConnection};
use tokio::sync::{oneshot, Semaphore};

use crate::error::{OutboxError, Result};

/// The most jobs one group runs (the rest wait for the next group).
const MAX_GROUP: usize = 256;

type Output = Result<Box<dyn Any + Send>>;
type Raw = std::result::Result<Box<dyn Any + Send>, sqlx::Error>;
type Run = Box<dyn for<'c> FnOnce(&'c mut SqliteConnection) -> Pin<Box<dyn Future<Output = Raw> + Send + 'c>> + Send>;

struct Job {
    run: Run,
    answer: oneshot::Sender<Output>,
}

/// The queue and the leader permit of one database's group commits.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    writer: SqlitePool,
    queue: Arc<Mutex<Vec<Job>>>,
    leader: Arc<Semaphore>,
    classify: Arc<dyn Fn(sqlx::Error) -> OutboxError + Send + Sync>,
}

impl std::fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl GroupCommit {
    /// Group commits on `writer` (a one-connection `synchronous=FULL` pool).
    pub(crate) fn new(writer: SqlitePool, classify: Arc<dyn Fn(sqlx::Error) -> OutboxError + Send + Sync>) -> GroupCommit {
        GroupCommit {
            writer,
            queue: Arc::new(Mutex::new(Vec::new())),
            leader: Arc::new(Semaphore::new(1)),
            classify,
        }
    }

    /// Closes the writer connection.
    pub(crate) async fn close(&self) {
        self.writer.close().await;
    }

    /// Runs `f` inside a shared durable transaction; its answer once that transaction is
    /// committed (or its own error, with nothing of it written).
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> Pin<Box<dyn Future<Output = std::result::Result<T, sqlx::Error>> + Send + 'c>>
            + Send
            + 'static,
    {
        let (answer, mut rx) = oneshot::channel();
        let run: Run = Box::new(move |conn| Box::pin(async move { f(conn).await.map(|v| Box::new(v) as Box<dyn Any + Send>) }));
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).push(Job { run, answer });
        loop {
            tokio::select! {
                biased;
                got = &mut rx => {
                    let value = got.map_err(|_| OutboxError::Database("la transacción compartida se interrumpió sin respuesta".into()))??;
                    return value
                        .downcast::<T>()
                        .map(|b| *b)
                        .map_err(|_| OutboxError::Database("respuesta de otro tipo en la transacción compartida".into()));
                }
                permit = self.leader.clone().acquire_owned() => {
                    let Ok(permit) = permit else {
                        return Err(OutboxError::Database("la escritura compartida está cerrada".into()));
                    };
                    let jobs = {
                        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                        let n = q.len().min(MAX_GROUP);
                        q.drain(..n).collect::<Vec<_>>()
                    };
                    if jobs.is_empty() {
                        // Ours was taken by an earlier leader, which answered before letting go.
                        drop(permit);
                        continue;
                    }
                    let me = self.clone();
                    tokio::spawn(async move {
                        me.commit_group(jobs).await;
                        drop(permit);
                    });
                }
            }
        }
    }

    async fn commit_group(&self, jobs: Vec<Job>) {
        let mut conn = match self.writer.acquire().await {
            Ok(c) => c,
            Err(e) => return fail_all(jobs.into_iter().map(|j| j.answer), &(self.classify)(e)),
        };
        let mut tx = match conn.begin_with(sql!("begin_write")).await {
            Ok(tx) => tx,
            Err(e) => return fail_all(jobs.into_iter().map(|j| j.answer), &(self.classify)(e)),
        };
        // A lone job is the whole transaction: no savepoint, and its failure rolls back all.
        if jobs.len() == 1 {
            let Some(job) = jobs.into_iter().next() else { return };
            let out = (job.run)(&mut tx).await.map_err(|e| (self.classify)(e));
            let answer = match out {
                Ok(v) => tx.commit().await.map(|()| v).map_err(|e| (self.classify)(e)),
                Err(e) => {
                    let _ = tx.rollback().await;
                    Err(e)
                }
            };
            let _ = job.answer.send(answer);
            return;
        }
        // Several: each job inside the savepoint `group_job`; closing one and opening the next
        // is one round trip to the writer's thread (`group_keep_then_next`, `group_undo_then_next`).
        let mut done: Vec<(oneshot::Sender<Output>, Output)> = Vec::with_capacity(jobs.len());
        if let Err(e) = execute(&mut tx, sql!("group_savepoint")).await {
            return fail_all(jobs.into_iter().map(|j| j.answer), &(self.classify)(e));
        }
        let mut jobs = jobs.into_iter().peekable();
        while let Some(job) = jobs.next() {
            let out = (job.run)(&mut tx).await.map_err(|e| (self.classify)(e));
            let last = jobs.peek().is_none();
            let close = match (out.is_ok(), last) {
                (true, false) => sql!("group_keep_then_next"),
                (true, true) => sql!("group_keep"),
                (false, false) => sql!("group_undo_then_next"),
                (false, true) => sql!("group_undo"),
            };
            if let Err(e) = execute(&mut tx, close).await {
                let e = (self.classify)(e);
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
        match tx.commit().await {
            Ok(()) => {
                for (answer, out) in done {
                    let _ = answer.send(out);
                }
            }
            Err(e) => fail_all(done.into_iter().map(|(a, _)| a), &(self.classify)(e)),
        }
    }
}

/// Runs group-control statements (boxed: a named future keeps the spawned group `Send`).
fn execute<'c>(
    conn: &'c mut SqliteConnection,
    sql: &'static str,
) -> Pin<Box<dyn Future<Output = std::result::Result<(), sqlx::Error>> + Send + 'c>> {
    // sqlx runs every statement of the text, one after the other, in one call to the worker.
    Box::pin(async move { sqlx::query(sql).execute(conn).await.map(|_| ()) })
}

fn fail_all(answers: impl IntoIterator<Item = oneshot::Sender<Output>>, e: &OutboxError) {
    for a in answers {
        let _ = a.send(Err(e.clone()));
    }
}
