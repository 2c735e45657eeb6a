//! Replay sets (supervisors only): a named, saved list of stored turns,
//! chosen by id or by a filter ([`ReplayFilter`]), replayed in one action
//! against another provider, engine or protocol, as one would before
//! switching models. Each turn of a replay run is a fork
//! ([`Console::fork_turn`]) from the checkpoint before its agent first
//! answers, with no edit; the run's task ([`run`]) queues them behind the
//! studio's cap on running forks. The report ([`Console::replay_run`]) is
//! computed from what is stored — the original turn's trace and the
//! fork's — with [`aics_types::replay_item`], the one comparison.
//!
//! The rows are `aics_db::replays`'; a run whose process died is ended by
//! the housekeeping sweep ([`run::sweep`]).

pub(crate) mod run;

use aics_agent::{EngineKind, PlanProtocol};
use aics_types::{
    replay_item, replay_totals, NewReplaySet, ReplayFilter, ReplayOptions, ReplayPreview,
    ReplayRunInfo, ReplayRunReport, ReplaySet, ReplaySetSummary, UserInfo,
    MAX_REPLAY_FILTER_TEXT_CHARS, MAX_REPLAY_SET_NAME_CHARS, MAX_REPLAY_SET_TURNS,
};

use crate::{check_id, Console, ServiceError};

/// What the forks of a replay run are started with, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ForkOptions {
    pub provider: Option<String>,
    pub engine: Option<EngineKind>,
    pub protocol: Option<PlanProtocol>,
}

impl Console {
    /// Supervisors only: how many stored turns `filter` matches (the
    /// preview before a set is made from it). 400 for a malformed filter.
    pub async fn preview_replay_filter(
        &self,
        user: &UserInfo,
        filter: &ReplayFilter,
    ) -> Result<ReplayPreview, ServiceError> {
        self.require_supervisor(user)?;
        let filter = check_filter(filter)?;
        Ok(ReplayPreview {
            matched: self.inner.db.count_filtered_turns(&filter).await?,
            limit: MAX_REPLAY_SET_TURNS as u64,
        })
    }

    /// Supervisors only: saves a replay set of the turns given by id (in
    /// that order, repeats dropped) or matched by the filter (newest
    /// first). 400, with nothing stored, for a bad name, both or neither
    /// of ids and filter, an unknown turn, no turn, or more than
    /// [`MAX_REPLAY_SET_TURNS`].
    #[tracing::instrument(skip_all)]
    pub async fn create_replay_set(
        &self,
        user: &UserInfo,
        request: &NewReplaySet,
    ) -> Result<ReplaySet, ServiceError> {
        self.require_supervisor(user)?;
        let name = check_name(&request.name)?;
        let (turn_ids, filter) = match (request.turn_ids.is_empty(), &request.filter) {
            (false, Some(_)) => {
                return Err(ServiceError::Invalid(
                    "give either turnIds or a filter, not both".into(),
                ))
            }
            (true, None) => {
                return Err(ServiceError::Invalid(
                    "give the set's turnIds or a filter".into(),
                ))
            }
            (false, None) => (self.explicit_turns(&request.turn_ids).await?, None),
            (true, Some(filter)) => {
                let filter = check_filter(filter)?;
                let limit = u32::try_from(MAX_REPLAY_SET_TURNS + 1).unwrap_or(u32::MAX);
                let ids = self.inner.db.filtered_turns(&filter, limit).await?;
                if ids.len() > MAX_REPLAY_SET_TURNS {
                    let n = self.inner.db.count_filtered_turns(&filter).await?;
                    return Err(ServiceError::Invalid(format!(
                        "the filter matches {n} turns; a replay set holds at most \
                         {MAX_REPLAY_SET_TURNS}: narrow it"
                    )));
                }
                (ids, Some(filter))
            }
        };
        if turn_ids.is_empty() {
            return Err(ServiceError::Invalid("the filter matches no turn".into()));
        }
        let id = uuid::Uuid::new_v4().to_string();
        let set = self
            .inner
            .db
            .insert_replay_set(&id, &name, &user.username, filter.as_ref(), &turn_ids)
            .await?;
        self.audit(
            &user.username,
            "replay.create",
            &id,
            &format!(
                "replay set {name:?}: {} turns{}",
                turn_ids.len(),
                if filter.is_some() {
                    ", from a filter"
                } else {
                    ""
                }
            ),
        )
        .await;
        Ok(set)
    }

    /// Supervisors only: the replay sets, newest first.
    pub async fn list_replay_sets(
        &self,
        user: &UserInfo,
    ) -> Result<Vec<ReplaySetSummary>, ServiceError> {
        self.require_supervisor(user)?;
        Ok(self.inner.db.replay_sets().await?)
    }

    /// Supervisors only: one replay set, its turns and its runs.
    pub async fn replay_set(&self, user: &UserInfo, id: &str) -> Result<ReplaySet, ServiceError> {
        self.require_supervisor(user)?;
        check_id("replay set id", id)?;
        self.inner
            .db
            .replay_set(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("replay set {id} does not exist")))
    }

    /// Supervisors only: starts a replay run of set `set_id` and returns it
    /// `running`; its task forks each turn in turn (see the module docs).
    /// 400 for a malformed option, 404 for an unknown set.
    #[tracing::instrument(skip_all, fields(set_id))]
    pub async fn start_replay(
        &self,
        user: &UserInfo,
        set_id: &str,
        options: &ReplayOptions,
    ) -> Result<ReplayRunInfo, ServiceError> {
        tracing::Span::current().record("set_id", set_id);
        self.require_supervisor(user)?;
        check_id("replay set id", set_id)?;
        let options = check_options(options)?;
        if let Some(name) = &options.provider {
            // 400 naming the configured ones, before anything is stored.
            self.inner.providers.named(name)?;
        }
        let id = uuid::Uuid::new_v4().to_string();
        let run = self
            .inner
            .db
            .insert_replay_run(&aics_db::NewReplayRun {
                id: &id,
                set_id,
                created_by: &user.username,
                provider: options.provider.as_deref(),
                engine: options.engine.map(EngineKind::as_str),
                protocol: options.protocol.map(PlanProtocol::as_str),
                owner: &self.inner.instance_id,
                lease: run::LEASE,
            })
            .await?;
        self.audit(
            &user.username,
            "replay.start",
            set_id,
            &format!(
                "replay run {id}: provider {}, engine {}, protocol {}",
                options.provider.as_deref().unwrap_or("as each turn"),
                options.engine.map_or("as each turn", EngineKind::as_str),
                options
                    .protocol
                    .map_or("as each turn", PlanProtocol::as_str),
            ),
        )
        .await;
        run::spawn(self, id, user.clone(), options);
        Ok(run)
    }

    /// Supervisors only: a replay run and its summary table, from the
    /// stored turns and forks.
    pub async fn replay_run(
        &self,
        user: &UserInfo,
        id: &str,
    ) -> Result<ReplayRunReport, ServiceError> {
        self.require_supervisor(user)?;
        check_id("replay run id", id)?;
        let db = &self.inner.db;
        let run = db
            .replay_run(id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("replay run {id} does not exist")))?;
        let set_name = db
            .replay_set(&run.set_id)
            .await?
            .map(|s| s.name)
            .unwrap_or_default();
        let mut items = Vec::new();
        for item in db.replay_run_items(id).await? {
            let original = db.turn(&item.graph_execution_id).await?;
            let fork = match &item.fork_id {
                Some(fork_id) => db.studio_run(fork_id).await?,
                None => None,
            };
            let gone =
                (item.fork_id.is_some() && fork.is_none()).then_some("the fork's record is gone");
            items.push(replay_item(
                &item.graph_execution_id,
                item.error.as_deref().or(gone),
                original.as_ref(),
                fork.as_ref(),
                run.state,
            ));
        }
        Ok(ReplayRunReport {
            totals: replay_totals(&items),
            run,
            set_name,
            items,
        })
    }

    /// The explicit turns of a new set: well-formed, stored, at most
    /// [`MAX_REPLAY_SET_TURNS`], repeats dropped.
    async fn explicit_turns(&self, ids: &[String]) -> Result<Vec<String>, ServiceError> {
        let mut unique: Vec<String> = Vec::new();
        for id in ids {
            check_id("turn id", id)?;
            if !unique.contains(id) {
                unique.push(id.clone());
            }
        }
        if unique.len() > MAX_REPLAY_SET_TURNS {
            return Err(ServiceError::Invalid(format!(
                "{} turns given; a replay set holds at most {MAX_REPLAY_SET_TURNS}",
                unique.len()
            )));
        }
        let stored = self.inner.db.stored_turn_ids(&unique).await?;
        if let Some(missing) = unique.iter().find(|id| !stored.contains(id)) {
            return Err(ServiceError::Invalid(format!(
                "turn {missing} does not exist"
            )));
        }
        Ok(unique)
    }
}

fn check_name(name: &str) -> Result<String, ServiceError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(ServiceError::Invalid("the replay set needs a name".into()));
    }
    if name.chars().count() > MAX_REPLAY_SET_NAME_CHARS {
        return Err(ServiceError::Invalid(format!(
            "the name has more than {MAX_REPLAY_SET_NAME_CHARS} characters"
        )));
    }
    aics_types::validate_text("name", name).map_err(ServiceError::Invalid)?;
    Ok(name.to_owned())
}

/// The filter with its text trimmed (none when blank), checked.
fn check_filter(filter: &ReplayFilter) -> Result<ReplayFilter, ServiceError> {
    let mut filter = filter.clone();
    filter.q = filter
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_owned);
    if let Some(q) = &filter.q {
        if q.chars().count() > MAX_REPLAY_FILTER_TEXT_CHARS {
            return Err(ServiceError::Invalid(format!(
                "the search text has more than {MAX_REPLAY_FILTER_TEXT_CHARS} characters"
            )));
        }
        aics_types::validate_text("q", q).map_err(ServiceError::Invalid)?;
    }
    filter.tool = filter.tool.filter(|t| !t.trim().is_empty());
    if let Some(tool) = &filter.tool {
        check_id("tool", tool)?;
    }
    if let (Some(from), Some(to)) = (filter.from, filter.to) {
        if from >= to {
            return Err(ServiceError::Invalid(
                "the date range ends before it starts".into(),
            ));
        }
    }
    Ok(filter)
}

/// A given, non-blank option, trimmed.
fn some(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

fn check_options(options: &ReplayOptions) -> Result<ForkOptions, ServiceError> {
    let engine = some(&options.engine)
        .map(|e| {
            EngineKind::parse(e).ok_or_else(|| {
                ServiceError::Invalid(format!("engine {e:?} is not graph or linear"))
            })
        })
        .transpose()?;
    let protocol = some(&options.protocol)
        .map(|p| {
            PlanProtocol::parse(p).ok_or_else(|| {
                ServiceError::Invalid(format!("protocol {p:?} is not native or json_plan"))
            })
        })
        .transpose()?;
    let provider = some(&options.provider).map(str::to_owned);
    if let Some(provider) = &provider {
        check_id("provider", provider)?;
    }
    Ok(ForkOptions {
        provider,
        engine,
        protocol,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_filters_are_checked() {
        let ok = check_options(&ReplayOptions {
            engine: Some(" Linear ".into()),
            protocol: Some("json".into()),
            provider: Some(" ".into()),
        })
        .unwrap();
        assert_eq!(ok.engine, Some(EngineKind::Linear));
        assert_eq!(ok.protocol, Some(PlanProtocol::JsonPlan));
        assert_eq!(ok.provider, None);
        for bad in [
            ReplayOptions {
                engine: Some("warp".into()),
                ..ReplayOptions::default()
            },
            ReplayOptions {
                protocol: Some("smoke".into()),
                ..ReplayOptions::default()
            },
        ] {
            assert!(matches!(check_options(&bad), Err(ServiceError::Invalid(_))));
        }
        let now = chrono::Utc::now();
        let backwards = ReplayFilter {
            from: Some(now),
            to: Some(now - chrono::Duration::days(1)),
            ..ReplayFilter::default()
        };
        assert!(check_filter(&backwards).is_err());
        let blank = check_filter(&ReplayFilter {
            q: Some("  ".into()),
            tool: Some(String::new()),
            ..ReplayFilter::default()
        })
        .unwrap();
        assert_eq!(blank, ReplayFilter::default());
        assert!(check_name(" ").is_err());
        assert!(check_name(&"x".repeat(121)).is_err());
        assert_eq!(check_name(" refunds ").unwrap(), "refunds");
    }
}
