//! Console accounts: a username (stored normalized, see
//! [`aics_types::normalize_username`]), an argon2id password hash, a role,
//! whether the account is disabled, and when it last signed in.
//! Hashing runs off the async workers ([`crate::passwords`]).

use aics_types::{normalize_username, Account, Role, Timestamp, UserInfo};

use crate::{now, parse_stored, passwords, Database, DbError};

/// The shortest password accepted at all (first-start passwords from the
/// configuration); passwords chosen in the console follow the stricter
/// [`aics_types::check_new_password`].
pub const MIN_PASSWORD_CHARS: usize = 8;

/// A first-start account made by [`Database::ensure_default_accounts`].
#[derive(Clone, PartialEq, Eq)]
pub struct DefaultAccount {
    pub username: String,
    pub role: Role,
    /// The password, when it was generated here and must be shown once;
    /// `None` when it came from the configuration.
    pub generated_password: Option<String>,
}

impl std::fmt::Debug for DefaultAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultAccount")
            .field("username", &self.username)
            .field("role", &self.role)
            .field(
                "generated_password",
                &self.generated_password.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}

/// What a password check found. Unknown users and wrong passwords are one
/// variant, so a caller cannot tell them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialCheck {
    /// The password is right and the account enabled.
    Valid(UserInfo),
    /// Unknown user or wrong password.
    Invalid,
    /// The password is right but a supervisor disabled the account.
    Disabled(UserInfo),
}

#[derive(sqlx::FromRow)]
struct UserRow {
    username: String,
    password_hash: String,
    role: String,
    disabled_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct AccountRow {
    username: String,
    role: String,
    disabled_at: Option<Timestamp>,
    created_at: Timestamp,
    last_sign_in_at: Option<Timestamp>,
    must_change_password: bool,
    failures: Option<i64>,
    blocked_until: Option<Timestamp>,
    sessions: i64,
}

impl UserRow {
    fn info(&self) -> Result<UserInfo, DbError> {
        Ok(UserInfo {
            username: self.username.clone(),
            role: parse_stored("role", &self.role, Role::parse)?,
        })
    }
}

const USER_COLUMNS: &str = "username, password_hash, role, disabled_at";

impl Database {
    /// Creates an account; fails with `InvalidInput` if the name is taken,
    /// malformed, or the password shorter than [`MIN_PASSWORD_CHARS`].
    #[tracing::instrument(skip_all, fields(username, role = role.as_str()))]
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        role: Role,
    ) -> Result<UserInfo, DbError> {
        self.insert_user(username, password, role, false).await
    }

    /// Creates an account whose owner should change the password (a
    /// supervisor made it for them).
    pub async fn create_user_with_issued_password(
        &self,
        username: &str,
        password: &str,
        role: Role,
    ) -> Result<UserInfo, DbError> {
        self.insert_user(username, password, role, true).await
    }

    async fn insert_user(
        &self,
        username: &str,
        password: &str,
        role: Role,
        must_change: bool,
    ) -> Result<UserInfo, DbError> {
        let username = normalize_username(username);
        tracing::Span::current().record("username", username.as_str());
        if username.is_empty() || username.chars().count() > aics_types::MAX_USERNAME_CHARS {
            return Err(DbError::InvalidInput(
                "a username has 1 to 64 characters".into(),
            ));
        }
        aics_types::validate_text("the username", &username).map_err(DbError::InvalidInput)?;
        let count = password.chars().count();
        if !(MIN_PASSWORD_CHARS..=aics_types::MAX_PASSWORD_CHARS).contains(&count) {
            return Err(DbError::InvalidInput(format!(
                "a password has {MIN_PASSWORD_CHARS} to {} characters",
                aics_types::MAX_PASSWORD_CHARS
            )));
        }
        let hash = passwords::hash(password).await?;
        let at = now();
        let inserted = with_pool!(self, pool => sqlx::query(
            "INSERT INTO users (username, password_hash, role, created_at, password_changed_at, \
             must_change_password) VALUES ($1, $2, $3, $4, $4, $5) \
             ON CONFLICT (username) DO NOTHING",
        )
        .bind(&username)
        .bind(hash)
        .bind(role.as_str())
        .bind(at)
        .bind(must_change)
        .execute(pool)
        .await?
        .rows_affected());
        if inserted == 0 {
            return Err(DbError::InvalidInput(format!(
                "user {username} already exists"
            )));
        }
        Ok(UserInfo { username, role })
    }

    /// Checks a password. An unknown user costs one argon2 check against a
    /// dummy hash, the same as a known one: the time taken says nothing
    /// about which names exist.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn check_credentials(
        &self,
        username: &str,
        password: &str,
    ) -> Result<CredentialCheck, DbError> {
        let username = normalize_username(username);
        tracing::Span::current().record("username", username.as_str());
        let row = self.user_row(&username).await?;
        let matched =
            passwords::verify(password, row.as_ref().map(|r| r.password_hash.as_str())).await?;
        Ok(match row {
            Some(row) if matched => {
                let info = row.info()?;
                if row.disabled_at.is_some() {
                    CredentialCheck::Disabled(info)
                } else {
                    CredentialCheck::Valid(info)
                }
            }
            _ => CredentialCheck::Invalid,
        })
    }

    /// The user, if the password is right and the account enabled; `None`
    /// for an unknown user, a wrong password or a disabled account alike.
    pub async fn verify_password(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Option<UserInfo>, DbError> {
        Ok(match self.check_credentials(username, password).await? {
            CredentialCheck::Valid(user) => Some(user),
            _ => None,
        })
    }

    async fn user_row(&self, username: &str) -> Result<Option<UserRow>, DbError> {
        Ok(with_pool!(self, pool => sqlx::query_as::<_, UserRow>(
            &format!("SELECT {USER_COLUMNS} FROM users WHERE username = $1"),
        )
        .bind(username)
        .fetch_optional(pool)
        .await?))
    }

    /// One user by name, disabled or not.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn user(&self, username: &str) -> Result<Option<UserInfo>, DbError> {
        tracing::Span::current().record("username", username);
        self.user_row(&normalize_username(username))
            .await?
            .map(|r| r.info())
            .transpose()
    }

    /// One user by name, if the account is enabled.
    pub async fn active_user(&self, username: &str) -> Result<Option<UserInfo>, DbError> {
        self.user_row(&normalize_username(username))
            .await?
            .filter(|r| r.disabled_at.is_none())
            .map(|r| r.info())
            .transpose()
    }

    /// Every account with its sign-in state, by name. `throttle_key` makes
    /// the throttle's key of a username (see [`crate::throttle`]).
    pub async fn list_accounts(&self, now: Timestamp) -> Result<Vec<Account>, DbError> {
        let rows = with_pool!(self, pool => sqlx::query_as::<_, AccountRow>(
            "SELECT u.username, u.role, u.disabled_at, u.created_at, u.last_sign_in_at, \
                    u.must_change_password, f.failures, f.blocked_until, \
                    (SELECT COUNT(*) FROM sessions s WHERE s.username = u.username \
                       AND s.expires_at > $1) AS sessions \
             FROM users u LEFT JOIN sign_in_failures f ON f.key = 'user:' || u.username \
             ORDER BY u.username",
        )
        .bind(now)
        .fetch_all(pool)
        .await?);
        rows.into_iter()
            .map(|r| {
                Ok(Account {
                    role: parse_stored("role", &r.role, Role::parse)?,
                    username: r.username,
                    disabled: r.disabled_at.is_some(),
                    created_at: r.created_at,
                    last_sign_in_at: r.last_sign_in_at,
                    locked_until: r.blocked_until.filter(|until| *until > now),
                    failed_sign_ins: r.failures.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32,
                    active_sessions: r.sessions.clamp(0, i64::from(u32::MAX)) as u32,
                    must_change_password: r.must_change_password,
                })
            })
            .collect()
    }

    /// Disables (ending every session of the account, in one transaction)
    /// or re-enables an account. `false` when there is no such user.
    #[tracing::instrument(skip_all, fields(username, disabled))]
    pub async fn set_user_disabled(&self, username: &str, disabled: bool) -> Result<bool, DbError> {
        let at = now();
        let changed = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let changed = sqlx::query(
                "UPDATE users SET disabled_at = CASE WHEN $2 THEN COALESCE(disabled_at, $3) \
                 ELSE NULL END WHERE username = $1",
            )
            .bind(username)
            .bind(disabled)
            .bind(at)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if disabled {
                sqlx::query("DELETE FROM sessions WHERE username = $1")
                    .bind(username)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            changed
        });
        Ok(changed > 0)
    }

    /// Sets a new password and ends the account's sessions but the one
    /// named by `keep_session` (the owner's own browser when they change
    /// it). `must_change` marks a password someone else chose.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn set_password(
        &self,
        username: &str,
        password: &str,
        must_change: bool,
        keep_session: Option<&str>,
    ) -> Result<bool, DbError> {
        let hash = passwords::hash(password).await?;
        let at = now();
        let changed = with_pool!(self, pool => {
            let mut tx = pool.begin().await?;
            let changed = sqlx::query(
                "UPDATE users SET password_hash = $2, password_changed_at = $3, \
                 must_change_password = $4 WHERE username = $1",
            )
            .bind(username)
            .bind(&hash)
            .bind(at)
            .bind(must_change)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            sqlx::query("DELETE FROM sessions WHERE username = $1 AND token_hash <> $2")
                .bind(username)
                .bind(keep_session.unwrap_or(""))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            changed
        });
        Ok(changed > 0)
    }

    /// Whether the account's password was set by someone else.
    pub async fn must_change_password(&self, username: &str) -> Result<bool, DbError> {
        let row: Option<(bool,)> = with_pool!(self, pool => sqlx::query_as(
            "SELECT must_change_password FROM users WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(pool)
        .await?);
        Ok(row.is_some_and(|(b,)| b))
    }

    /// Notes a successful sign-in.
    pub async fn record_sign_in(&self, username: &str) -> Result<(), DbError> {
        with_pool!(self, pool => sqlx::query(
            "UPDATE users SET last_sign_in_at = $2 WHERE username = $1",
        )
        .bind(username)
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        Ok(())
    }

    /// How many enabled supervisors there are (the last one may not be
    /// disabled).
    pub async fn enabled_supervisors(&self) -> Result<i64, DbError> {
        let (n,): (i64,) = with_pool!(self, pool => sqlx::query_as(
            "SELECT COUNT(*) FROM users WHERE role = 'supervisor' AND disabled_at IS NULL",
        )
        .fetch_one(pool)
        .await?);
        Ok(n)
    }

    /// Makes the first-start accounts `supervisor` and `agent` when missing,
    /// with the given passwords or generated ones. Existing accounts are left
    /// alone (their passwords are not reset). Returns the accounts created.
    pub async fn ensure_default_accounts(
        &self,
        supervisor_password: Option<&str>,
        agent_password: Option<&str>,
    ) -> Result<Vec<DefaultAccount>, DbError> {
        let mut created = Vec::new();
        for (username, role, configured) in [
            ("supervisor", Role::Supervisor, supervisor_password),
            ("agent", Role::Agent, agent_password),
        ] {
            if self.user(username).await?.is_some() {
                continue;
            }
            let generated = match configured {
                Some(_) => None,
                None => Some(passwords::generate()),
            };
            let password = configured.or(generated.as_deref()).unwrap_or_default();
            match self.create_user(username, password, role).await {
                Ok(_) => created.push(DefaultAccount {
                    username: username.to_owned(),
                    role,
                    generated_password: generated,
                }),
                // Another instance made it between the check and the insert.
                Err(DbError::InvalidInput(_)) if self.user(username).await?.is_some() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(created)
    }
}
