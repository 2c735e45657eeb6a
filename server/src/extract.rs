//! Extractors whose rejections are `ApiError` JSON instead of axum's plain
//! text: [`Json`], [`Path`] and [`Query`].

use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};

use crate::error::HttpError;

/// `axum::Json`, rejecting with a JSON error.
#[derive(Debug, Clone, Copy, Default, FromRequest)]
#[from_request(via(axum::Json), rejection(HttpError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// `axum::extract::Path`, rejecting with a JSON error.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(HttpError))]
pub struct Path<T>(pub T);

/// `axum::extract::Query`, rejecting with a JSON error.
#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(HttpError))]
pub struct Query<T>(pub T);
