//! The frame of every signed-in page: the header with the product, the
//! navigation, the active model, the user and sign-out.

use leptos::prelude::*;
use leptos_router::hooks::use_location;

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
    let logout = ServerAction::<Logout>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = logout.value().get() {
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
                <span
                    data-testid="model-info"
                    title=format!(
                        "Provider {} · engine {} · up to {} tool loops",
                        model.provider,
                        model.engine,
                        model.max_tool_loops,
                    )
                    class="hidden items-center gap-1.5 rounded-full border border-slate-200 bg-slate-50 px-2.5 py-1 font-mono text-xs text-slate-600 sm:inline-flex"
                >
                    <span aria-hidden="true" class="h-1.5 w-1.5 rounded-full bg-emerald-500"></span>
                    <span class="sr-only">"Model: "</span>
                    {format!("{} · {}", model.model, model.engine)}
                </span>
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
                <ActionForm action=logout>
                    <button
                        type="submit"
                        data-testid="sign-out"
                        class="rounded-md border border-slate-200 px-3 py-1.5 text-slate-700 hover:bg-slate-50 focus-visible:outline-2 focus-visible:outline-indigo-500"
                    >
                        "Sign out"
                    </button>
                </ActionForm>
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
        Effect::new(move |_| {
            refresh();
            if let Ok(handle) =
                set_interval_with_handle(refresh, std::time::Duration::from_secs(20))
            {
                on_cleanup(move || handle.clear());
            }
        });
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
