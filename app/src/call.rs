//! [`Call`]: a server function a page calls from the browser, with its
//! last answer, whether a call is on its way, and how many have answered.
//!
//! It does for the pages what Leptos's `ServerAction` does, with the parts
//! they read and no more: `ServerAction` is an `ArcAction` (abort handles,
//! the input kept in a signal, every signal read through a mapped signal),
//! about 25 KB of the console's main wasm for its twelve actions
//! (BENCHMARKS.md "Client bundle"). Here only the answer's signal depends
//! on the server function's types; the counters are shared code.
//!
//! As with `ServerAction`, a form posted before the page's script ran (a
//! `<ServerForm>`) whose call failed comes back to the page with the error
//! in its URL (`?__err=…&__path=…`, read by the router); the call of that
//! server function starts with that error as its answer.

use leptos::prelude::*;
use leptos::server::ServerActionError;
use leptos::server_fn::error::{FromServerFnError, ServerFnUrlError};
use leptos::server_fn::ServerFn;

/// The answer of the last call of `S` to complete, if any.
pub type Answer<S> = Option<Result<<S as ServerFn>::Output, <S as ServerFn>::Error>>;

/// A server function `S` called from the page (see the module's docs).
///
/// Its signals are split once, when it is made: `RwSignal::read_only` would
/// put a new handle in the reactive arena on every read of the answer.
pub struct Call<S: ServerFn> {
    answer: ReadSignal<Answer<S>>,
    set_answer: WriteSignal<Answer<S>>,
    counts: Counts,
}

/// How many calls are on their way and how many have answered.
#[derive(Clone, Copy)]
struct Counts {
    in_flight: RwSignal<usize>,
    answered: ReadSignal<usize>,
    set_answered: WriteSignal<usize>,
}

impl Counts {
    fn new() -> Self {
        let (answered, set_answered) = signal(0);
        Self {
            in_flight: RwSignal::new(0),
            answered,
            set_answered,
        }
    }

    fn started(self) {
        self.in_flight.update(|n| *n += 1);
    }

    /// `try_`: the page may be gone by the time an answer arrives.
    fn finished(self) {
        self.in_flight.try_update(|n| *n = n.saturating_sub(1));
        self.set_answered.try_update(|n| *n += 1);
    }

    fn pending(self) -> Signal<bool> {
        let in_flight = self.in_flight;
        Signal::derive(move || in_flight.get() > 0)
    }
}

impl<S: ServerFn> Clone for Call<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: ServerFn> Copy for Call<S> {}

impl<S> Call<S>
where
    S: ServerFn + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: FromServerFnError + Send + Sync + 'static,
{
    /// A call of `S` that has not been made (or the error of the form post
    /// that brought the page back, see the module's docs).
    pub fn new() -> Self {
        let answer = use_context::<ServerActionError>().and_then(|error| {
            (error.path() == S::PATH)
                .then(|| Err(ServerFnUrlError::<S::Error>::decode_err(error.err())))
        });
        let (answer, set_answer) = signal(answer);
        Self {
            answer,
            set_answer,
            counts: Counts::new(),
        }
    }

    /// Calls `S` with `args` (from an event handler, in the browser); its
    /// answer becomes [`Call::answer`] when it arrives.
    pub fn dispatch(&self, args: S) {
        let Self {
            set_answer, counts, ..
        } = *self;
        counts.started();
        leptos::task::spawn_local(async move {
            // The client half of a server function: the request to its
            // URL, as the function itself and Leptos's actions make it.
            let result = args.run_on_client().await;
            counts.finished();
            set_answer.try_set(Some(result));
        });
    }
}

impl<S: ServerFn> Call<S>
where
    S::Output: Send + Sync + 'static,
    S::Error: Send + Sync + 'static,
{
    /// The answer of the last call to complete (`None` before the first).
    pub fn answer(&self) -> ReadSignal<Answer<S>> {
        self.answer
    }

    /// Whether a call is on its way.
    pub fn pending(&self) -> Signal<bool> {
        self.counts.pending()
    }

    /// How many calls have answered: read it to reload what a call changes.
    pub fn answered(&self) -> ReadSignal<usize> {
        self.counts.answered
    }
}

impl<S> Default for Call<S>
where
    S: ServerFn + Send + Sync + 'static,
    S::Output: Send + Sync + 'static,
    S::Error: FromServerFnError + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}
