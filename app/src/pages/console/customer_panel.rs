//! The customer panel beside the conversation: who it is with (pick or
//! change; the customer a visitor's email or an order id in the
//! conversation points to is proposed, never applied), their profile, orders, tickets, past conversations and
//! remembered facts, each with who and when and a "forget" action.
//! Loaded by the browser only, after mount, into a signal: the server and
//! the hydrating page both render the same placeholder. (Not a
//! `LocalResource` in `<Suspense>`: one that resolves while the page
//! hydrates contradicts the Suspense's markers and the hydration panics.)

use aics_types::{CustomerPanel, CustomerProfile};
use leptos::prelude::*;

use crate::call::Call;

use super::api::{list_customers, load_customer_panel, ForgetMemory, SetCustomer};
use super::live::Chat;

#[component]
pub fn CustomerPanelView(chat: Chat) -> impl IntoView {
    let state = chat.state;
    let session_id = StoredValue::new(state.with_untracked(|s| s.session_id().to_string()));
    let version = RwSignal::new(0u32);
    // Reloaded when a turn ends (it may have remembered something) and
    // after every change made here.
    let turns = Memo::new(move |_| state.with(|s| s.turns.len()));
    // None until the browser has loaded it (and on the server).
    type Loaded = Result<(CustomerPanel, Vec<aics_types::Customer>), String>;
    let loaded = RwSignal::new(None::<Loaded>);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let _ = (version.get(), turns.get());
        let session = session_id.get_value();
        leptos::task::spawn_local(async move {
            let all = list_customers().await.unwrap_or_default();
            let result = load_customer_panel(session)
                .await
                .map(|panel| (panel, all))
                .map_err(|e| e.message);
            loaded.set(Some(result));
        });
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (list_customers, load_customer_panel, turns);
    let set = Call::<SetCustomer>::new();
    let forget = Call::<ForgetMemory>::new();
    let error = RwSignal::new(None::<String>);
    Effect::new(move |_| match set.answer().get() {
        Some(Ok(_)) => {
            error.set(None);
            version.update(|v| *v += 1);
        }
        Some(Err(e)) => error.set(Some(e.message)),
        None => {}
    });
    Effect::new(move |_| match forget.answer().get() {
        Some(Ok(())) => version.update(|v| *v += 1),
        Some(Err(e)) => error.set(Some(e.message)),
        None => {}
    });
    let choose = move |customer: String| {
        set.dispatch(SetCustomer {
            session_id: session_id.get_value(),
            customer,
        });
    };
    view! {
        <section data-testid="customer-panel" class="space-y-2 rounded-xl border border-slate-200 bg-white p-3 text-sm">
            <h2 class="text-sm font-semibold text-slate-700">"Customer"</h2>
            <p role="alert" class="text-xs text-red-700 empty:hidden">{move || error.get().unwrap_or_default()}</p>
            {move || match loaded.get() {
                None => view! { <p class="text-xs text-slate-500">"Loading the customer…"</p> }.into_any(),
                Some(Ok((panel, all))) => view! { <PanelBody panel all choose forget/> }.into_any(),
                Some(Err(message)) => view! { <p class="text-xs text-red-700">{message}</p> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn PanelBody(
    panel: CustomerPanel,
    all: Vec<aics_types::Customer>,
    choose: impl Fn(String) + Copy + Send + Sync + 'static,
    forget: Call<ForgetMemory>,
) -> impl IntoView {
    let current = panel.profile.as_ref().map(|p| p.customer.id.clone());
    let picked = RwSignal::new(current.clone().unwrap_or_default());
    let contact_email = panel.contact.as_ref().map(|c| c.email.to_lowercase());
    // A visitor of the customer page is who they typed, unverified: the
    // panel says so, and linking a customer stays a person's decision.
    let contact = panel.contact.clone().map(|c| {
        view! {
            <p data-testid="customer-contact" class="rounded-lg bg-slate-50 px-2 py-1 text-xs text-slate-700">
                "Visitor, unverified: " <strong>{c.name}</strong> " · " {c.email}
            </p>
        }
    });
    let proposed = panel.proposed.clone().map(|c| {
        let id = c.id.clone();
        let why = if contact_email.as_deref() == Some(c.email.to_lowercase().as_str()) {
            "The visitor's email is that of "
        } else {
            "An order in this conversation belongs to "
        };
        view! {
            <p data-testid="customer-proposed" class="rounded-lg bg-amber-50 px-2 py-1 text-xs text-amber-900">
                {why} <strong>{c.name.clone()}</strong> " (" {c.id.clone()} "). Check who you are talking to before you link them. "
                <button type="button" data-testid="use-proposed" class="font-medium underline" on:click=move |_| choose(id.clone())>
                    "Use"
                </button>
            </p>
        }
    });
    view! {
        {contact}
        {proposed}
        <div class="flex gap-1">
            <label class="sr-only" for="customer-pick">"Customer"</label>
            <select
                id="customer-pick"
                data-testid="customer-pick"
                class="min-w-0 flex-1 rounded border border-slate-300 px-1 py-0.5 text-xs"
                on:change=move |ev| picked.set(event_target_value(&ev))
            >
                <option value="" selected=current.is_none()>"— no customer —"</option>
                {all
                    .into_iter()
                    .map(|c| {
                        let selected = current.as_deref() == Some(c.id.as_str());
                        view! {
                            <option value=c.id.clone() selected=selected>
                                {format!("{} · {} · {}", c.id, c.name, c.email)}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
            <button
                type="button"
                data-testid="customer-set"
                class="rounded border border-slate-300 px-2 text-xs"
                on:click=move |_| {
                    let id = picked.get_untracked();
                    if !id.is_empty() {
                        choose(id);
                    }
                }
            >
                "Set"
            </button>
        </div>
        {panel.profile.map(|profile| view! { <Profile profile forget/> })}
    }
}

#[component]
fn Profile(profile: CustomerProfile, forget: Call<ForgetMemory>) -> impl IntoView {
    let c = profile.customer;
    let customer_id = StoredValue::new(c.id.clone());
    view! {
        <div data-testid="customer-profile" class="space-y-2 text-xs text-slate-700">
            <p>
                <strong class="text-sm">{c.name}</strong> " · " {c.email} " · " {c.tier} " · " {c.lang}
            </p>
            <h3 class="font-semibold">"Orders"</h3>
            <ul class="space-y-0.5">
                {profile.orders.into_iter().map(|o| view! {
                    <li><code>{o.id}</code> " · " {o.status} " · " {aics_types::money(o.total_cents)} " " {o.currency}</li>
                }).collect_view()}
            </ul>
            <h3 class="font-semibold">"Tickets"</h3>
            <ul class="space-y-0.5">
                {profile.tickets.into_iter().map(|t| view! {
                    <li><code>{t.id}</code> " · " {t.category} " · " {t.status}</li>
                }).collect_view()}
            </ul>
            <h3 class="font-semibold">"Past conversations"</h3>
            <ul class="space-y-0.5">
                {profile.conversations.into_iter().map(|s| view! {
                    <li><a class="text-indigo-700 hover:underline" href=format!("/c/{}", s.session_id)>{s.title}</a></li>
                }).collect_view()}
            </ul>
            <h3 class="font-semibold">"Remembered"</h3>
            <ul data-testid="customer-memories" class="space-y-1">
                {profile.memories.into_iter().map(|m| {
                    let id = m.id;
                    view! {
                        <li class="flex items-start gap-2">
                            <span class="flex-1">
                                {m.text}
                                <span class="block text-[11px] text-slate-500">
                                    {format!(
                                        "by {} · {} UTC",
                                        m.created_by.unwrap_or_else(|| "?".into()),
                                        crate::components::time::date_hm(&m.created_at),
                                    )}
                                </span>
                            </span>
                            <button
                                type="button"
                                data-testid="forget-memory"
                                class="rounded border border-slate-300 px-1.5 text-[11px] hover:bg-slate-50"
                                on:click=move |_| {
                                    forget.dispatch(ForgetMemory { customer_id: customer_id.get_value(), memory_id: id });
                                }
                            >
                                "Forget"
                            </button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </div>
    }
}
