//! Watching turns from outside: the [`TurnObserver`] hook a console is
//! built with ([`crate::Console::with_observer`]), told about each run
//! segment of a turn once its outcome is stored. aics-otel exports them as
//! OpenTelemetry spans; with none, nothing of this runs.
//!
//! A turn that pauses for approval runs in segments: the run until the
//! pause, then the resumed run (on whichever instance resumed it) until the
//! next pause or the end. The trace a segment ends with carries the whole
//! turn so far; [`TurnSegment`] says which part of it is this segment's, as
//! the metrics count it (`metrics::Counted`): the LLM calls and tool calls
//! of earlier segments were reported with them.

use std::collections::HashSet;

use aics_types::{Approval, ChatTurnTraceResult, ModelInfo, Timestamp};

/// Receives the run segments of turns. Methods have no-op defaults; they
/// run in the turn's task after its outcome is stored, so they must return
/// at once (hand the work to a background exporter) and never panic.
pub trait TurnObserver: Send + Sync {
    /// A segment ended and its outcome is stored: finished, failed with a
    /// trace, or paused for approval (`trace.pending_tool_calls`).
    fn segment_stored(&self, _segment: &TurnSegment<'_>) {}

    /// A segment ended without a trace (the checkpoint store or the graph
    /// failed); the run keeps its state and recovery tries again.
    fn segment_failed(&self, _failure: &SegmentFailure<'_>) {}
}

/// How a segment began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentKind {
    /// The turn's first run, for a customer message.
    New,
    /// A paused turn resumed with the supervisors' decisions.
    Resumed,
    /// A run taken over from an owner that died.
    Recovered,
}

impl SegmentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Resumed => "resumed",
            Self::Recovered => "recovered",
        }
    }
}

/// One run segment of a turn whose outcome is stored.
#[derive(Debug)]
pub struct TurnSegment<'a> {
    /// The turn's trace as stored (the whole turn so far). A paused one
    /// carries the caller's `approval_token`: never export it.
    pub trace: &'a ChatTurnTraceResult,
    pub kind: SegmentKind,
    /// When this segment's task started and when its outcome was stored.
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    /// How many of `trace.llm_call_records` earlier segments made.
    pub earlier_llm_calls: usize,
    /// The ids of the tool calls that had ended in earlier segments.
    pub earlier_tool_calls: &'a HashSet<String>,
    /// The decided approvals this segment resumed with (empty for a new
    /// turn), each with who decided and when.
    pub decisions: &'a [Approval],
    /// The provider and model answering.
    pub model: &'a ModelInfo,
}

/// A segment that ended without a trace.
#[derive(Debug)]
pub struct SegmentFailure<'a> {
    pub session_id: &'a str,
    pub graph_execution_id: &'a str,
    pub kind: SegmentKind,
    pub started_at: Timestamp,
    pub ended_at: Timestamp,
    /// A low-cardinality class: `checkpoint`, `graph` or `unknown_run`.
    pub error_type: &'static str,
    pub model: &'a ModelInfo,
}

/// How a segment began, as its task knows it, for the observer at its end.
#[derive(Debug, Clone)]
pub(crate) struct SegmentStart {
    pub(crate) kind: SegmentKind,
    pub(crate) started_at: Timestamp,
    /// The calls that waited for a decision when the segment began.
    pub(crate) awaited: Vec<String>,
}

impl SegmentStart {
    pub(crate) fn new(kind: SegmentKind, previous: Option<&ChatTurnTraceResult>) -> Self {
        Self {
            kind,
            started_at: chrono::Utc::now(),
            awaited: previous
                .map(|t| t.pending_tool_calls.iter().map(|c| c.id.clone()).collect())
                .unwrap_or_default(),
        }
    }
}

impl crate::Console {
    /// Tells the observer, if any, that a segment's outcome is stored: with
    /// the decisions it resumed with (read only when there is an observer).
    pub(crate) async fn observe_stored(
        &self,
        trace: &ChatTurnTraceResult,
        counted: &crate::metrics::Counted,
        start: &SegmentStart,
    ) {
        let Some(observer) = &self.inner.observer else {
            return;
        };
        let decisions: Vec<Approval> = if start.awaited.is_empty() {
            Vec::new()
        } else {
            match self
                .inner
                .db
                .approvals_of_execution(&trace.graph_execution_id)
                .await
            {
                Ok(all) => all
                    .into_iter()
                    .filter(|a| a.decided_at.is_some() && start.awaited.contains(&a.id))
                    .collect(),
                Err(e) => {
                    tracing::warn!(error = %e, "could not read a turn's decisions for its observer");
                    Vec::new()
                }
            }
        };
        observer.segment_stored(&TurnSegment {
            trace,
            kind: start.kind,
            started_at: start.started_at,
            ended_at: chrono::Utc::now(),
            earlier_llm_calls: counted.llm_calls as usize,
            earlier_tool_calls: &counted.tool_calls,
            decisions: &decisions,
            model: &self.inner.model_info,
        });
    }

    /// Tells the observer, if any, that a segment ended without a trace.
    pub(crate) fn observe_failed(
        &self,
        session_id: &str,
        graph_execution_id: &str,
        start: &SegmentStart,
        error_type: &'static str,
    ) {
        if let Some(observer) = &self.inner.observer {
            observer.segment_failed(&SegmentFailure {
                session_id,
                graph_execution_id,
                kind: start.kind,
                started_at: start.started_at,
                ended_at: chrono::Utc::now(),
                error_type,
                model: &self.inner.model_info,
            });
        }
    }
}
