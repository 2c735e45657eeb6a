//! Named accounts: supervisors create, disable and re-enable them, reset
//! their passwords (the new one shown once) and unlock them; everyone
//! changes their own password. Every change goes to the audit log.

use aics_db::throttle::user_key;
use aics_db::CredentialCheck;
use aics_types::{
    normalize_username, Account, IssuedPassword, NewAccount, PasswordChange, Role, UserInfo,
};
use http::HeaderMap;

use crate::auth::API_USER;
use crate::error::ServiceError;
use crate::Console;

impl Console {
    /// Supervisors only: every account with its sign-in state (locked
    /// accounts show `lockedUntil`).
    pub async fn list_accounts(&self, user: &UserInfo) -> Result<Vec<Account>, ServiceError> {
        self.require_supervisor(user)?;
        Ok(self.inner.db.list_accounts(chrono::Utc::now()).await?)
    }

    /// Supervisors only: one account.
    pub async fn account(&self, user: &UserInfo, username: &str) -> Result<Account, ServiceError> {
        self.require_supervisor(user)?;
        let username = normalize_username(username);
        self.inner
            .db
            .list_accounts(chrono::Utc::now())
            .await?
            .into_iter()
            .find(|a| a.username == username)
            .ok_or_else(|| ServiceError::NotFound(format!("account {username} does not exist")))
    }

    /// Supervisors only: a new account with a generated password, returned
    /// here once (its owner is asked to change it).
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    pub async fn create_account(
        &self,
        user: &UserInfo,
        new: &NewAccount,
    ) -> Result<IssuedPassword, ServiceError> {
        self.require_supervisor(user)?;
        aics_types::validate_text("the username", &new.username).map_err(ServiceError::Invalid)?;
        let username = normalize_username(&new.username);
        aics_types::validate_username(&username).map_err(ServiceError::Invalid)?;
        let password = aics_db::passwords::generate();
        let created = self
            .inner
            .db
            .create_user_with_issued_password(&username, &password, new.role)
            .await
            .map_err(|e| match e {
                aics_db::DbError::InvalidInput(_) => {
                    ServiceError::Conflict(format!("the username {username} is taken"))
                }
                other => other.into(),
            })?;
        self.audit(
            &user.username,
            "account.create",
            &created.username,
            &format!("role {}", created.role.as_str()),
        )
        .await;
        tracing::info!(username = %created.username, "account created");
        Ok(IssuedPassword {
            username: created.username,
            password,
        })
    }

    /// Supervisors only: disables (ending the account's sessions and event
    /// streams) or re-enables an account. Nobody disables themselves, and
    /// the last enabled supervisor stays.
    #[tracing::instrument(skip_all, fields(user = %user.username, disabled))]
    pub async fn set_account_disabled(
        &self,
        user: &UserInfo,
        username: &str,
        disabled: bool,
    ) -> Result<Account, ServiceError> {
        self.require_supervisor(user)?;
        let target = self.existing_user(username).await?;
        if disabled {
            if target.username == user.username {
                return Err(ServiceError::Conflict(
                    "you cannot disable your own account".into(),
                ));
            }
            if target.role == Role::Supervisor && self.inner.db.enabled_supervisors().await? <= 1 {
                return Err(ServiceError::Conflict(
                    "this is the last enabled supervisor; enable or create another first".into(),
                ));
            }
        }
        self.inner
            .db
            .set_user_disabled(&target.username, disabled)
            .await?;
        if disabled {
            self.inner.streams.revoke(&target.username);
        }
        self.audit(
            &user.username,
            if disabled {
                "account.disable"
            } else {
                "account.enable"
            },
            &target.username,
            if disabled { "sessions ended" } else { "" },
        )
        .await;
        self.account(user, &target.username).await
    }

    /// Supervisors only: a new generated password for someone else,
    /// returned here once. Their sessions end and their sign-in lock is
    /// lifted; they are asked to change it.
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    pub async fn reset_password(
        &self,
        user: &UserInfo,
        username: &str,
    ) -> Result<IssuedPassword, ServiceError> {
        self.require_supervisor(user)?;
        let target = self.existing_user(username).await?;
        let password = aics_db::passwords::generate();
        self.inner
            .db
            .set_password(&target.username, &password, true, None)
            .await?;
        self.inner
            .db
            .clear_user_sign_in_failures(&target.username)
            .await?;
        self.inner.streams.revoke(&target.username);
        self.audit(
            &user.username,
            "account.password_reset",
            &target.username,
            "sessions ended",
        )
        .await;
        Ok(IssuedPassword {
            username: target.username,
            password,
        })
    }

    /// Supervisors only: lifts a sign-in lock (the failures are forgotten).
    pub async fn unlock_account(
        &self,
        user: &UserInfo,
        username: &str,
    ) -> Result<Account, ServiceError> {
        self.require_supervisor(user)?;
        let target = self.existing_user(username).await?;
        if self
            .inner
            .db
            .clear_user_sign_in_failures(&target.username)
            .await?
        {
            self.audit(&user.username, "account.unlock", &target.username, "")
                .await;
        }
        self.account(user, &target.username).await
    }

    /// Changes the signed-in user's own password: the current one must be
    /// right (wrong guesses count like failed sign-ins), the new one must
    /// pass [`aics_types::check_new_password`]. The user's other sessions
    /// end; this browser stays signed in.
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    pub async fn change_own_password(
        &self,
        user: &UserInfo,
        headers: &HeaderMap,
        change: &PasswordChange,
    ) -> Result<(), ServiceError> {
        if user.username == API_USER {
            return Err(ServiceError::Forbidden(
                "the API token has no password".into(),
            ));
        }
        aics_types::validate_text("the password", &change.current_password)
            .map_err(ServiceError::Invalid)?;
        aics_types::check_new_password(&change.new_password, &user.username)
            .map_err(ServiceError::Invalid)?;
        if change.new_password == change.current_password {
            return Err(ServiceError::Invalid(
                "the new password must differ from the current one".into(),
            ));
        }
        let db = &self.inner.db;
        let key = user_key(&user.username);
        if let Some(until) = db.sign_in_blocked_until(std::slice::from_ref(&key)).await? {
            let wait = (until - chrono::Utc::now())
                .to_std()
                .unwrap_or(std::time::Duration::from_secs(1));
            return Err(ServiceError::TooManyRequests {
                message: format!(
                    "Too many wrong passwords. Wait {} before trying again.",
                    crate::auth::wait_text(wait)
                ),
                retry_after: wait,
            });
        }
        match db
            .check_credentials(&user.username, &change.current_password)
            .await?
        {
            CredentialCheck::Valid(_) => {}
            _ => {
                let policy = self.inner.config.throttle;
                self.count_wrong_current_password(&key, &user.username, policy)
                    .await?;
                return Err(ServiceError::Invalid(
                    "the current password is wrong".into(),
                ));
            }
        }
        let keep = self.session_token_hash(headers);
        db.set_password(&user.username, &change.new_password, false, keep.as_deref())
            .await?;
        // The ended sessions' event streams here end now.
        self.inner
            .streams
            .revoke_other_sessions(&user.username, keep.as_deref());
        self.audit(
            &user.username,
            "account.password_change",
            &user.username,
            "other sessions ended",
        )
        .await;
        Ok(())
    }

    async fn count_wrong_current_password(
        &self,
        key: &str,
        username: &str,
        policy: crate::config::ThrottlePolicy,
    ) -> Result<(), ServiceError> {
        let now = chrono::Utc::now();
        let quiet_since = now - chrono::Duration::from_std(policy.lock_for).unwrap_or_default();
        let failures = self
            .inner
            .db
            .record_sign_in_failure(key, quiet_since)
            .await?;
        if let Some(block) = policy.block_after(failures, policy.user_free, policy.user_lock_after)
        {
            let until = now + chrono::Duration::from_std(block).unwrap_or_default();
            self.inner.db.block_sign_in(key, until).await?;
        }
        tracing::info!(username, failures, "wrong current password");
        Ok(())
    }

    /// Whether the user's password was set by a supervisor and should be
    /// changed (the console asks them to).
    pub async fn must_change_password(&self, user: &UserInfo) -> Result<bool, ServiceError> {
        Ok(self.inner.db.must_change_password(&user.username).await?)
    }

    async fn existing_user(&self, username: &str) -> Result<UserInfo, ServiceError> {
        aics_types::validate_text("the username", username).map_err(ServiceError::Invalid)?;
        let username = normalize_username(username);
        self.inner
            .db
            .user(&username)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("account {username} does not exist")))
    }
}
