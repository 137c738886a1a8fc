//! Group commit on PostgreSQL: the drain's small write transactions of one process (a try
//! recorded before its request leaves, a PAC answer's evidence, a CFDI, a fenced verdict) share
//! one durable `BEGIN … COMMIT`, and their change notifications are sent right after it.
//!
//! Why: every write of the drain touches an `invoices` row (directly, or through the
//! `facts_version` its evidence, try or CFDI bumps), and the `invoices_notify` trigger announces
//! it to the consoles on channel `timbra_changes` (`ops::changes`). A transaction that calls
//! `pg_notify` takes one database-wide lock from its pre-commit until its commit record is
//! flushed, so notifying commits are serialized across every process — the WAL flush of each
//! one alone (measured with pgbench on the development machine: ~500 notifying commits/s however
//! many clients, ~3,300/s without the notify). So the group's transaction starts with the local
//! setting `timbra.defer_notify` on, in the same round trip as its `BEGIN`: the triggers
//! (migration 0019) then add the changed invoice ids to the connection's setting
//! `timbra.changed` instead of notifying, and once the `COMMIT` is durable one statement of its
//! own (`timbra_send_changes()`) notifies each id once and empties the list. That statement
//! writes nothing (no commit record to flush), so it holds the notify lock only for an instant:
//! the drain's durable commits of every process run concurrently. Fewer, larger commits per
//! worker still save a WAL flush per write.
//!
//! How (as `store/sqlite/group_commit.rs`): a caller queues its write as a job and waits for its
//! own answer. Whoever holds the one leader permit takes every queued job and runs them in a
//! spawned task (so a caller dropped mid-group never cuts a group short) on one pooled
//! connection: `BEGIN`, each job inside its own `SAVEPOINT` (a job that fails rolls back only
//! itself — and the ids it recorded, since settings roll back with the savepoint), one `COMMIT`;
//! then the permit is let go (the next group gathers and begins), the notifications are sent,
//! and only then each caller gets its answer. A lone job runs in its own transaction without a
//! savepoint, deferring its notifications the same way.
//!
//! Invariants: a caller is answered `Ok` only after the commit that holds its write is durable,
//! so "the try is recorded before the request leaves" and "evidence before state" hold exactly
//! as with one transaction per write: a caller submits its next write only after the previous
//! one is answered. A failed commit answers every job of the group with the error; nothing of
//! the group is written and nothing is notified (the rollback empties the list too). Row locks
//! a job takes (the fenced writes' `FOR UPDATE`) are held until the group's commit, as they
//! would be until the job's own commit. A change is announced before its caller is answered, as
//! when the commit itself notified; but a notification is a hint: one that fails to leave (the
//! connection lost, the process killed between the commit and the notify) loses nothing
//! written, and the consoles' feed notices on its own that an invoice row, a try or an evidence
//! row moved (`ops::changes`).

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use sqlx::postgres::{PgConnection, PgPool};
use sqlx::Connection;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

use crate::error::{OutboxError, Result};

/// The most jobs one group runs (the rest wait for the next group).
const MAX_GROUP: usize = 64;

type Output = Result<Box<dyn Any + Send>>;
type Raw = std::result::Result<Box<dyn Any + Send>, sqlx::Error>;
type Run = Box<dyn for<'c> FnOnce(&'c mut PgConnection) -> Pin<Box<dyn Future<Output = Raw> + Send + 'c>> + Send>;

struct Job {
    run: Run,
    answer: oneshot::Sender<Output>,
}

/// The queue and the leader permit of one store's group commits.
#[derive(Clone)]
pub(crate) struct GroupCommit {
    pool: PgPool,
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
    /// Group commits on connections of `pool`.
    pub(crate) fn new(pool: PgPool, classify: Arc<dyn Fn(sqlx::Error) -> OutboxError + Send + Sync>) -> GroupCommit {
        GroupCommit {
            pool,
            queue: Arc::new(Mutex::new(Vec::new())),
            leader: Arc::new(Semaphore::new(1)),
            classify,
        }
    }

    /// Runs `f` inside a shared durable transaction; its answer once that transaction is
    /// committed (or its own error, with nothing of it written).
    pub(crate) async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut PgConnection) -> Pin<Box<dyn Future<Output = std::result::Result<T, sqlx::Error>> + Send + 'c>>
            + Send
            + 'static,
    {
        let (answer, mut rx) = oneshot::channel();
        let run: Run = Box::new(move |conn| Box::pin(async move { f(conn).await.map(|v| Box::new(v) as Box<dyn Any + Send>) }));
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).push(Job { run, answer });
        let unpack = |got: std::result::Result<Output, oneshot::error::RecvError>| -> Result<T> {
            let value = got.map_err(|_| OutboxError::Database("la transacción compartida se interrumpió sin respuesta".into()))??;
            value
                .downcast::<T>()
                .map(|b| *b)
                .map_err(|_| OutboxError::Database("respuesta de otro tipo en la transacción compartida".into()))
        };
        loop {
            tokio::select! {
                biased;
                got = &mut rx => return unpack(got),
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
                        // Ours was taken by an earlier leader, which answers it (after letting
                        // go: it sends its group's notifications first).
                        drop(permit);
                        return unpack((&mut rx).await);
                    }
                    let me = self.clone();
                    tokio::spawn(async move { me.commit_group(jobs, permit).await });
                }
            }
        }
    }

    /// Runs `jobs` in one transaction and answers each; `permit` (the leader's) is let go once
    /// the transaction has ended, before its notifications are sent.
    async fn commit_group(&self, jobs: Vec<Job>, permit: OwnedSemaphorePermit) {
        let classify = &self.classify;
        let mut conn = match self.pool.acquire().await {
            Ok(c) => c,
            Err(e) => return fail_all(jobs.into_iter().map(|j| j.answer), &classify(e)),
        };
        let mut tx = match conn.begin_with(sql!("begin_deferring_notify")).await {
            Ok(tx) => tx,
            Err(e) => return fail_all(jobs.into_iter().map(|j| j.answer), &classify(e)),
        };
        let alone = jobs.len() == 1;
        let mut done: Vec<(oneshot::Sender<Output>, Output)> = Vec::with_capacity(jobs.len());
        let mut jobs = jobs.into_iter();
        while let Some(job) = jobs.next() {
            let out = if alone {
                // Its own transaction: an error rolls it back whole, nothing else is in it.
                (job.run)(&mut tx).await.map_err(|e| classify(e))
            } else {
                let mut sp = match Connection::begin(&mut *tx).await {
                    Ok(sp) => sp,
                    Err(e) => {
                        let e = classify(e);
                        let rest = done
                            .into_iter()
                            .map(|(a, _)| a)
                            .chain(std::iter::once(job.answer))
                            .chain(jobs.map(|j| j.answer));
                        return fail_all(rest, &e);
                    }
                };
                let out = (job.run)(&mut sp).await.map_err(|e| classify(e));
                let kept = if out.is_ok() { sp.commit().await } else { sp.rollback().await };
                if let Err(e) = kept {
                    let e = classify(e);
                    let rest = done
                        .into_iter()
                        .map(|(a, _)| a)
                        .chain(std::iter::once(job.answer))
                        .chain(jobs.map(|j| j.answer));
                    return fail_all(rest, &e);
                }
                out
            };
            done.push((job.answer, out));
        }
        if alone && done.iter().any(|(_, out)| out.is_err()) {
            // Its own error is its answer; the rollback only ends the transaction (and drops
            // the changes it recorded: nothing to notify).
            let _ = tx.rollback().await;
            drop(permit);
            for (answer, out) in done {
                let _ = answer.send(out);
            }
            return;
        }
        if let Err(e) = tx.commit().await {
            return fail_all(done.into_iter().map(|(a, _)| a), &classify(e));
        }
        drop(permit);
        // Autocommit, after the durable commit: a notification lost here loses only a hint.
        if let Err(e) = sqlx::query(sql!("send_changes")).execute(&mut *conn).await {
            tracing::warn!(error = %e, "no se pudo avisar a las consolas de los cambios del drenado");
        }
        for (answer, out) in done {
            let _ = answer.send(out);
        }
    }
}

fn fail_all(answers: impl IntoIterator<Item = oneshot::Sender<Output>>, e: &OutboxError) {
    for a in answers {
        let _ = a.send(Err(e.clone()));
    }
}
