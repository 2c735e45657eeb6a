//! Signing in and out: the sign-in page, the guard around signed-in pages,
//! and the header with the user, the role and the active model.

use leptos::prelude::*;
use leptos_router::components::{Redirect, A};

use crate::api::{AppError, Login, Logout, Session};

/// The signed-in session, loaded once by [`crate::App`].
#[derive(Clone, Copy)]
pub struct SessionResource(pub Resource<Result<Option<Session>, AppError>>);

/// Sends the browser to `path` with a full page load, so that every
/// resource is fetched again with the new cookie.
pub fn reload_to(path: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href(path);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = path;
}

/// Renders `children` with the signed-in [`Session`]; redirects to `/login`
/// when nobody is signed in.
#[component]
pub fn Authed<F, V>(children: F) -> impl IntoView
where
    F: Fn(Session) -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    let session = expect_context::<SessionResource>().0;
    let children = StoredValue::new(children);
    view! {
        <Suspense fallback=|| view! { <PageLoading/> }>
            {move || Suspend::new(async move {
                match session.await {
                    Ok(Some(session)) => children.with_value(|c| c(session)).into_any(),
                    Ok(None) => view! { <Redirect path="/login"/> }.into_any(),
                    Err(e) => view! { <PageError message=e.message/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
pub fn PageLoading() -> impl IntoView {
    view! {
        <div class="flex min-h-[50vh] items-center justify-center text-sm text-slate-500">
            "Loading…"
        </div>
    }
}

#[component]
pub fn PageError(message: String) -> impl IntoView {
    view! {
        <div
            role="alert"
            class="mx-auto mt-10 max-w-lg rounded-xl border border-red-200 bg-red-50 p-4 text-sm text-red-800"
        >
            {message}
        </div>
    }
}

/// The page frame: the header above `children`.
#[component]
pub fn Layout(session: Session, children: Children) -> impl IntoView {
    view! {
        <div class="flex min-h-screen flex-col">
            <Header session/>
            <div class="flex-1">{children()}</div>
        </div>
    }
}

/// The top bar: product, navigation, the active model, the user and sign-out.
#[component]
fn Header(session: Session) -> impl IntoView {
    let logout = ServerAction::<Logout>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = logout.value().get() {
            reload_to("/login");
        }
    });
    let supervisor = session.is_supervisor();
    let model = session.model.clone();
    let role = session.user.role.as_str();
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
            <nav aria-label="Main" class="flex items-center gap-1 text-sm">
                <A
                    href="/"
                    exact=true
                    attr:class="rounded-md px-3 py-1.5 text-slate-600 hover:bg-slate-100 aria-[current=page]:bg-slate-100 aria-[current=page]:font-medium aria-[current=page]:text-slate-900"
                >
                    "Conversations"
                </A>
                {supervisor
                    .then(|| {
                        view! {
                            <A
                                href="/approvals"
                                attr:data-testid="nav-approvals"
                                attr:class="rounded-md px-3 py-1.5 text-slate-600 hover:bg-slate-100 aria-[current=page]:bg-slate-100 aria-[current=page]:font-medium aria-[current=page]:text-slate-900"
                            >
                                "Approvals"
                            </A>
                        }
                    })}
            </nav>
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
                    <span data-testid="user-name" class="font-medium text-slate-800">
                        {session.user.username.clone()}
                    </span>
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
        </header>
    }
}

/// `/login`: the sign-in form; a signed-in visitor goes to the console.
#[component]
pub fn LoginPage() -> impl IntoView {
    let session = expect_context::<SessionResource>().0;
    view! {
        <Suspense fallback=|| view! { <PageLoading/> }>
            {move || Suspend::new(async move {
                match session.await {
                    Ok(Some(_)) => view! { <Redirect path="/"/> }.into_any(),
                    _ => view! { <LoginForm/> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn LoginForm() -> impl IntoView {
    let login = ServerAction::<Login>::new();
    Effect::new(move |_| {
        if let Some(Ok(_)) = login.value().get() {
            reload_to("/");
        }
    });
    let error = move || match login.value().get() {
        Some(Err(e)) => Some(e.message),
        _ => None,
    };
    let pending = login.pending();
    view! {
        <main class="flex min-h-screen items-center justify-center bg-gradient-to-br from-slate-100 via-white to-indigo-50 p-4">
            <div class="w-full max-w-sm">
                <div class="mb-6 flex items-center gap-3">
                    <span
                        aria-hidden="true"
                        class="grid h-10 w-10 place-items-center rounded-xl bg-indigo-600 font-bold text-white"
                    >
                        "ai"
                    </span>
                    <div>
                        <h1 class="text-xl font-semibold tracking-tight">"Sign in to aics"</h1>
                        <p class="text-sm text-slate-500">"AI customer-support console"</p>
                    </div>
                </div>
                <ActionForm action=login attr:class="space-y-4 rounded-2xl border border-slate-200 bg-white p-6 shadow-sm">
                    <div>
                        <label for="username" class="mb-1 block text-sm font-medium text-slate-700">
                            "Username"
                        </label>
                        <input
                            id="username"
                            name="username"
                            data-testid="login-username"
                            autocomplete="username"
                            required
                            autofocus
                            class="w-full rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                        />
                    </div>
                    <div>
                        <label for="password" class="mb-1 block text-sm font-medium text-slate-700">
                            "Password"
                        </label>
                        <input
                            id="password"
                            name="password"
                            type="password"
                            data-testid="login-password"
                            autocomplete="current-password"
                            required
                            class="w-full rounded-lg border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-200"
                        />
                    </div>
                    {move || {
                        error()
                            .map(|message| {
                                view! {
                                    <p
                                        role="alert"
                                        data-testid="login-error"
                                        class="rounded-lg bg-red-50 px-3 py-2 text-sm text-red-700"
                                    >
                                        {message}
                                    </p>
                                }
                            })
                    }}
                    <button
                        type="submit"
                        data-testid="login-submit"
                        disabled=move || pending.get()
                        class="w-full rounded-lg bg-indigo-600 px-4 py-2 font-medium text-white hover:bg-indigo-700 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-indigo-500 disabled:opacity-60"
                    >
                        {move || if pending.get() { "Signing in…" } else { "Sign in" }}
                    </button>
                </ActionForm>
                <p class="mt-4 text-center text-xs text-slate-500">
                    "Roles: support agent or supervisor. Ask your administrator for an account."
                </p>
            </div>
        </main>
    }
}
