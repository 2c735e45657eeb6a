//! A bar chart as inline SVG: one bar per value, scaled to the largest,
//! each with a tooltip; the same markup on the server and the client.

use leptos::prelude::*;

/// One bar: its label (a day, a tool) and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
}

const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 140.0;
const AXIS: f64 = 18.0;

/// The bars' rectangles `(x, y, width, height)` in the chart's box.
pub fn layout(values: &[f64]) -> Vec<(f64, f64, f64, f64)> {
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let n = values.len().max(1) as f64;
    let slot = WIDTH / n;
    let width = (slot * 0.8).max(1.0);
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let h = if max > 0.0 {
                (v / max) * (HEIGHT - AXIS)
            } else {
                0.0
            };
            (
                i as f64 * slot + (slot - width) / 2.0,
                HEIGHT - AXIS - h,
                width,
                h,
            )
        })
        .collect()
}

/// A titled bar chart; `format` writes a value for its tooltip and the
/// total shown beside the title.
#[component]
pub fn BarChart(
    title: &'static str,
    testid: &'static str,
    bars: Vec<Bar>,
    format: fn(f64) -> String,
    #[prop(optional)] total: Option<String>,
) -> impl IntoView {
    let rects = layout(&bars.iter().map(|b| b.value).collect::<Vec<_>>());
    let first = bars.first().map(|b| b.label.clone()).unwrap_or_default();
    let last = bars.last().map(|b| b.label.clone()).unwrap_or_default();
    view! {
        <section data-testid=testid class="rounded-xl border border-slate-200 bg-white p-3 shadow-sm">
            <div class="mb-1 flex items-baseline justify-between gap-2">
                <h2 class="text-sm font-semibold text-slate-700">{title}</h2>
                <span class="text-xs tabular-nums text-slate-500">{total.unwrap_or_default()}</span>
            </div>
            <svg
                viewBox=format!("0 0 {WIDTH} {HEIGHT}")
                role="img"
                aria-label=title
                class="h-36 w-full"
                preserveAspectRatio="none"
            >
                <line x1="0" y1=HEIGHT - AXIS x2=WIDTH y2=HEIGHT - AXIS class="stroke-slate-300" stroke-width="1"/>
                {bars
                    .into_iter()
                    .zip(rects)
                    .map(|(bar, (x, y, w, h))| {
                        view! {
                            <rect data-testid="bar" data-value=bar.value.to_string() x=x y=y width=w height=h class="fill-indigo-500">
                                <title>{format!("{}: {}", bar.label, format(bar.value))}</title>
                            </rect>
                        }
                    })
                    .collect_view()}
                <text x="0" y=HEIGHT - 4.0 class="fill-slate-500 text-[10px]">{first}</text>
                <text x=WIDTH y=HEIGHT - 4.0 text-anchor="end" class="fill-slate-500 text-[10px]">{last}</text>
            </svg>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_and_zero_stays_flat() {
        let rects = layout(&[1.0, 2.0, 0.0]);
        assert_eq!(rects.len(), 3);
        assert!(
            (rects[1].3 - (HEIGHT - AXIS)).abs() < 1e-9,
            "the largest fills the box"
        );
        assert!((rects[0].3 - (HEIGHT - AXIS) / 2.0).abs() < 1e-9);
        assert_eq!(rects[2].3, 0.0);
        assert!(layout(&[0.0, 0.0]).iter().all(|r| r.3 == 0.0));
        assert!(layout(&[]).is_empty());
    }
}
