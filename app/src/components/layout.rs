//! The frame of every signed-in page: the header with the product, the
//! navigation, the active model with its provider's reachability, the
//! user and sign-out.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::call::Call;
use crate::components::server_form::ServerForm;
use crate::pages::approvals::notify::PendingNotice;
use crate::session::api::Logout;
use crate::session::{reload_to, Session};

/// The page frame: the header above `children`.
#[component]
pub fn Layout(session: Session, children: Children) -> impl IntoView {
    let must_change = session.must_change_password;
    view! {
        <div class="flex min-h-screen flex-col">
            <Header session/>
            {must_change.then(|| view! {
                <div role="status" data-testid="change-password-banner" class="border-b border-amber-200 bg-amber-50 px-4 py-2 text-sm text-amber-900 lg:px-6">
                    "A supervisor set your password. "
                    <a href="/account" class="font-medium underline">"Choose your own now"</a>
                    "."
                </div>
            })}
            <div class="flex-1">{children()}</div>
        </div>
    }
}

const NAV_LINK: &str = "rounded-md px-3 py-1.5 text-slate-600 hover:bg-slate-100 aria-[current=page]:bg-slate-100 aria-[current=page]:font-medium aria-[current=page]:text-slate-900";

#[component]
fn Header(session: Session) -> impl IntoView {
    let logout = Call::<Logout>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = logout.answer().get() {
            reload_to("/login");
        }
    });
    let path = use_location().pathname;
    // `/` opens a conversation, so every conversation is "Conversations".
    let in_console = move || {
        path.with(|p| p == "/" || p.starts_with("/c/"))
            .then_some("page")
    };
    let in_approvals = move || path.with(|p| p == "/approvals").then_some("page");
    let in_accounts = move || path.with(|p| p == "/accounts").then_some("page");
    let in_overview = move || path.with(|p| p == "/overview").then_some("page");
    let in_replays = move || path.with(|p| p == "/replays").then_some("page");
    let in_account = move || path.with(|p| p == "/account").then_some("page");
    let supervisor = session.is_supervisor();
    let model = session.model.clone();
    let role = session.user.role.as_str();
    // The header's view type is erased in parts (`into_any`): with every
    // page's link and live badge in one static type, rustc's query depth
    // overflows when the browser bundle is compiled.
    let nav = view! {
            <nav aria-label="Main" class="flex items-center gap-1 text-sm">
                <a href="/" aria-current=in_console class=NAV_LINK>
                    "Conversations"
                </a>
                <WaitingForHuman/>
                {supervisor
                    .then(|| {
                        view! {
                            <a
                                href="/approvals"
                                data-testid="nav-approvals"
                                aria-current=in_approvals
                                class=NAV_LINK
                            >
                                "Approvals"
                            </a>
                            <PendingNotice/>
                            <a
                                href="/accounts"
                                data-testid="nav-accounts"
                                aria-current=in_accounts
                                class=NAV_LINK
                            >
                                "Accounts"
                            </a>
                            <a
                                href="/overview"
                                data-testid="nav-overview"
                                aria-current=in_overview
                                class=NAV_LINK
                            >
                                "Overview"
                            </a>
                            <a
                                href="/replays"
                                data-testid="nav-replays"
                                aria-current=in_replays
                                class=NAV_LINK
                            >
                                "Replays"
                            </a>
                        }
                        .into_any()
                    })}
            </nav>
    }
    .into_any();
    let account = view! {
            <div class="ml-auto flex items-center gap-3 text-sm">
                <ModelInfoPill model/>
                <span class="flex items-center gap-2">
                    <a
                        href="/account"
                        data-testid="user-name"
                        aria-current=in_account
                        title="Your account: password, sessions"
                        class="font-medium text-slate-800 hover:underline"
                    >
                        {session.user.username.clone()}
                    </a>
                    <span
                        data-testid="user-role"
                        class=if supervisor {
                            "rounded-full bg-violet-100 px-2 py-0.5 text-xs font-medium text-violet-800"
                        } else {
                            "rounded-full bg-sky-100 px-2 py-0.5 text-xs font-medium text-sky-800"
                        }
                    >
                        {role}
                    </span>
                </span>
                <ServerForm action=logout input=|_| Logout {}>
                    <button
                        type="submit"
                        data-testid="sign-out"
                        class="rounded-md border border-slate-200 px-3 py-1.5 text-slate-700 hover:bg-slate-50 focus-visible:outline-2 focus-visible:outline-indigo-500"
                    >
                        "Sign out"
                    </button>
                </ServerForm>
            </div>
    }
    .into_any();
    view! {
        <header class="sticky top-0 z-20 flex h-14 items-center gap-4 border-b border-slate-200 bg-white/95 px-4 backdrop-blur lg:px-6">
            <a href="/" class="flex items-center gap-2 font-semibold tracking-tight text-slate-900">
                <span
                    aria-hidden="true"
                    class="grid h-7 w-7 place-items-center rounded-lg bg-indigo-600 text-xs font-bold text-white"
                >
                    "ai"
                </span>
                <span>"aics"</span>
                <span class="hidden text-sm font-normal text-slate-500 md:inline">"Support console"</span>
            </a>
            {nav}
            {account}
        </header>
    }
}

/// The active model and engine, with a dot for whether the default
/// provider answered its start-up probe and, in the title, its name and
/// status. The providers are fetched by the browser after mount (and every
/// minute): the server and the hydrating page render the same grey dot and
/// "checking" line, as [`WaitingForHuman`] does.
#[component]
fn ModelInfoPill(model: aics_types::ModelInfo) -> impl IntoView {
    let default = RwSignal::new(None::<aics_types::ProviderInfo>);
    #[cfg(feature = "hydrate")]
    {
        let refresh = move || {
            leptos::task::spawn_local(async move {
                if let Ok(list) = crate::session::api::list_providers().await {
                    default.set(list.into_iter().find(|p| p.is_default));
                }
            })
        };
        Effect::new(move |_| refresh());
        crate::components::poll::poll_every(std::time::Duration::from_secs(60), refresh);
    }
    let settings = format!(
        "engine {} · up to {} tool loops",
        model.engine, model.max_tool_loops
    );
    let title = move || match default.get() {
        Some(p) => format!(
            "Provider {} ({}, {}) · {}{} · {settings}",
            p.name,
            p.kind,
            p.model,
            p.status_text(),
            p.checked_at
                .map(|t| format!(" · checked {} UTC", crate::components::time::hms(&t)))
                .unwrap_or_default(),
        ),
        None => format!("Provider {} · {settings}", model.provider),
    };
    let reachability = move || {
        default
            .get()
            .map(|p| p.reachability.as_str())
            .unwrap_or("checking")
    };
    let dot = move || {
        use aics_types::Reachability;
        let colour = match default.get() {
            Some(p) => match (p.reachability, p.model_listed) {
                (Reachability::Reachable, Some(false)) => "bg-amber-500",
                (Reachability::Reachable | Reachability::Demo, _) => "bg-emerald-500",
                (Reachability::Unreachable, _) => "bg-rose-500",
                (Reachability::Unknown, _) => "bg-slate-300",
            },
            None => "bg-slate-300",
        };
        format!("h-1.5 w-1.5 rounded-full {colour}")
    };
    let status = move || match default.get() {
        Some(p) => format!(", provider {}: {}", p.name, p.status_text()),
        None => ", provider status: checking".into(),
    };
    view! {
        <span
            data-testid="model-info"
            data-reachability=reachability
            title=title
            class="hidden items-center gap-1.5 rounded-full border border-slate-200 bg-slate-50 px-2.5 py-1 font-mono text-xs text-slate-600 sm:inline-flex"
        >
            <span aria-hidden="true" data-testid="provider-dot" class=dot></span>
            <span class="sr-only">"Model: "</span>
            {format!("{} · {}", model.model, model.engine)}
            <span data-testid="provider-status" class="sr-only">{status}</span>
        </span>
    }
}

/// The count of conversations waiting for a person, fetched by the browser
/// after mount and again every 20 seconds. The server and the hydrating page
/// render the same hidden placeholder: no `Suspense` here, whose markers a
/// browser-only resource that resolves during hydration would contradict
/// (that was a hydration panic of the whole console).
#[component]
fn WaitingForHuman() -> impl IntoView {
    let count = RwSignal::new(0u64);
    #[cfg(feature = "hydrate")]
    {
        let refresh = move || {
            leptos::task::spawn_local(async move {
                if let Ok(n) = crate::pages::console::api::waiting_for_human().await {
                    count.set(n);
                }
            })
        };
        Effect::new(move |_| refresh());
        crate::components::poll::poll_every(std::time::Duration::from_secs(20), refresh);
    }
    view! {
        <span
            data-testid="waiting-human"
            data-count=move || count.get().to_string()
            title="Conversations waiting for a person"
            class=move || {
                if count.get() > 0 {
                    "rounded-full bg-rose-100 px-2 py-0.5 text-xs font-medium text-rose-800"
                } else {
                    "hidden"
                }
            }
        >
            {move || format!("{} waiting", count.get())}
        </span>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use leptos::prelude::*;

    use super::ModelInfoPill;

    /// The server renders the placeholder the hydrating page renders too:
    /// a grey dot and "checking", the providers not fetched yet.
    #[test]
    fn the_model_pill_renders_its_placeholder_on_the_server() {
        let model = aics_types::ModelInfo {
            provider: "demo".into(),
            model: "demo".into(),
            engine: "graph".into(),
            max_tool_loops: 5,
        };
        let owner = Owner::new();
        let html = owner.with(|| view! { <ModelInfoPill model/> }.to_html());
        assert!(html.contains(r#"data-reachability="checking""#), "{html}");
        assert!(html.contains("bg-slate-300"), "{html}");
        assert!(html.contains("provider status: checking"), "{html}");
        assert!(html.contains("demo · graph"), "{html}");
    }
}
