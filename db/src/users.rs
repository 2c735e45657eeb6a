//! Console accounts: a username, an argon2id password hash and a role.

use aics_types::{Role, UserInfo};
use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use rand::distributions::{Alphanumeric, DistString};

use crate::{now, parse_stored, Database, DbError};

/// The shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 8;

/// A first-start account made by [`Database::ensure_default_accounts`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultAccount {
    pub username: String,
    pub role: Role,
    /// The password, when it was generated here and must be shown once;
    /// `None` when it came from the configuration.
    pub generated_password: Option<String>,
}

fn hash_password(password: &str) -> Result<String, DbError> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| DbError::Password(e.to_string()))
}

#[derive(sqlx::FromRow)]
struct UserRow {
    username: String,
    password_hash: String,
    role: String,
}

impl Database {
    /// Creates an account; fails with `InvalidInput` if the name is taken or
    /// the password is too short.
    #[tracing::instrument(skip_all, fields(username, role = role.as_str()))]
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        role: Role,
    ) -> Result<UserInfo, DbError> {
        tracing::Span::current().record("username", username);
        let username = username.trim();
        if username.is_empty() || username.chars().count() > 64 {
            return Err(DbError::InvalidInput(
                "a username has 1 to 64 characters".into(),
            ));
        }
        if password.chars().count() < MIN_PASSWORD_CHARS {
            return Err(DbError::InvalidInput(format!(
                "a password has at least {MIN_PASSWORD_CHARS} characters"
            )));
        }
        let hash = hash_password(password)?;
        let inserted = with_pool!(self, pool => sqlx::query(
            "INSERT INTO users (username, password_hash, role, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (username) DO NOTHING",
        )
        .bind(username)
        .bind(hash)
        .bind(role.as_str())
        .bind(now())
        .execute(pool)
        .await?
        .rows_affected());
        if inserted == 0 {
            return Err(DbError::InvalidInput(format!(
                "user {username} already exists"
            )));
        }
        Ok(UserInfo {
            username: username.to_owned(),
            role,
        })
    }

    /// The user, if the password is right; `None` for an unknown user or a
    /// wrong password alike, so a caller cannot tell which.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn verify_password(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Option<UserInfo>, DbError> {
        tracing::Span::current().record("username", username);
        let row = with_pool!(self, pool => sqlx::query_as::<_, UserRow>(
            "SELECT username, password_hash, role FROM users WHERE username = $1",
        )
        .bind(username.trim())
        .fetch_optional(pool)
        .await?);
        let Some(row) = row else {
            return Ok(None);
        };
        let hash =
            PasswordHash::new(&row.password_hash).map_err(|e| DbError::Corrupt(e.to_string()))?;
        if Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_err()
        {
            return Ok(None);
        }
        Ok(Some(UserInfo {
            role: parse_stored("role", &row.role, Role::parse)?,
            username: row.username,
        }))
    }

    /// One user by name.
    #[tracing::instrument(skip_all, fields(username))]
    pub async fn user(&self, username: &str) -> Result<Option<UserInfo>, DbError> {
        tracing::Span::current().record("username", username);
        let row = with_pool!(self, pool => sqlx::query_as::<_, UserRow>(
            "SELECT username, password_hash, role FROM users WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(pool)
        .await?);
        row.map(|r| {
            Ok(UserInfo {
                role: parse_stored("role", &r.role, Role::parse)?,
                username: r.username,
            })
        })
        .transpose()
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
                None => Some(Alphanumeric.sample_string(&mut rand::thread_rng(), 20)),
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
