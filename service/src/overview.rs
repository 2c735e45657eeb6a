//! The supervisors' overview: [`Console::overview`], counted by the
//! database (`aics_db::overview`) over the last days.

use aics_types::{Overview, UserInfo};

use crate::error::ServiceError;
use crate::Console;

/// The window when none is asked for, and the longest one.
pub const DEFAULT_OVERVIEW_DAYS: u32 = 30;
pub const MAX_OVERVIEW_DAYS: u32 = 365;

/// The window asked for: 1 to [`MAX_OVERVIEW_DAYS`] days, 30 by default.
fn window(days: Option<u32>) -> Result<u32, ServiceError> {
    match days {
        None => Ok(DEFAULT_OVERVIEW_DAYS),
        Some(days) if (1..=MAX_OVERVIEW_DAYS).contains(&days) => Ok(days),
        Some(days) => Err(ServiceError::Invalid(format!(
            "days must be between 1 and {MAX_OVERVIEW_DAYS}, not {days}"
        ))),
    }
}

impl Console {
    /// Turns, tools, approvals, latency, tokens and cost of the last `days`
    /// days (today included, UTC). Supervisors only.
    #[tracing::instrument(skip_all, fields(days))]
    pub async fn overview(
        &self,
        user: &UserInfo,
        days: Option<u32>,
    ) -> Result<Overview, ServiceError> {
        self.require_supervisor(user)?;
        let days = window(days)?;
        Ok(self.inner.db.overview(chrono::Utc::now(), days).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_checked() {
        assert_eq!(window(None).ok(), Some(30));
        assert_eq!(window(Some(7)).ok(), Some(7));
        assert!(matches!(window(Some(0)), Err(ServiceError::Invalid(_))));
        assert!(matches!(window(Some(366)), Err(ServiceError::Invalid(_))));
    }
}
