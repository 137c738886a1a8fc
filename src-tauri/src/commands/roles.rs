//! Roles with a credential: the contador's PIN, unlocking, locking and leaving a role.

use super::*;

pub(super) async fn role_locks_of(ready: &Ready) -> Res<Vec<RoleLockDto>> {
    let mut out = Vec::new();
    for role in outbox::role_credentials::LOCKABLE {
        out.push(RoleLockDto {
            role: *role,
            has_credential: ready.outbox.role_has_credential(*role).await?,
            unlocked_until: ready.outbox.role_unlocked_until(*role).map(|t| t.to_rfc3339()),
        });
    }
    Ok(out)
}

/// Which roles carry a credential and which are unlocked in this window.
#[tauri::command]
pub async fn role_locks(state: State<'_, AppState>) -> Res<Vec<RoleLockDto>> {
    role_locks_of(state.ready()?).await
}

/// Unlocks `role` for a limited time with its credential (never stored, never logged: it
/// crosses as a [`SecretText`]). A wrong one is refused and locks the role. From then on this
/// desk acts in `role` (the contador) until [`leave_role`] or a restart; the outbox still checks
/// every action and re-asks for every risky one.
#[tauri::command]
pub async fn unlock_role(state: State<'_, AppState>, role: Role, pin: SecretText) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.unlock_role(role, pin.secret()).await?;
    ready.act_as(role);
    role_locks_of(ready).await
}

/// Locks `role` again in this window (a contador stepping away): the desk still shows the
/// role's work, and its next action asks for the PIN.
#[tauri::command]
pub async fn lock_role(state: State<'_, AppState>, role: Role) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.lock_role(role);
    role_locks_of(ready).await
}

/// Leaves `role` (entered with its PIN): locked again, and the desk back to the seat's own role.
#[tauri::command]
pub async fn leave_role(state: State<'_, AppState>, role: Role) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    ready.outbox.lock_role(role);
    ready.stop_acting_as(role);
    role_locks_of(ready).await
}

/// Sets (or changes) `role`'s PIN given proof of authority: its current PIN, or the password of
/// the emisor's CSD key (the first PIN, or a forgotten one). Whoever acts here is recorded.
#[tauri::command]
pub async fn set_role_pin(state: State<'_, AppState>, role: Role, pin: SecretText, proof: RoleProofDto) -> Res<Vec<RoleLockDto>> {
    let ready = state.ready()?;
    let proof_secret = proof.secret.secret();
    let proof = match proof.kind {
        RoleProofKindDto::CurrentPin => outbox::role_credentials::RoleProof::CurrentCredential(proof_secret),
        RoleProofKindDto::CsdPassword => outbox::role_credentials::RoleProof::CsdPassword(proof_secret),
    };
    ready.outbox.set_role_credential(role, pin.secret(), proof, &ready.actor()).await?;
    role_locks_of(ready).await
}
