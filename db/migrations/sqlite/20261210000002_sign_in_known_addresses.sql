-- The addresses each user has signed in from (issue 58): failed sign-ins
-- from elsewhere do not slow down a sign-in from one of these. A row is
-- written by a good sign-in only, and purged after 90 days unused.
-- SQLite flavour; never edit once landed.
CREATE TABLE sign_in_known_addresses (
    username        TEXT NOT NULL,
    address         TEXT NOT NULL,
    last_sign_in_at TEXT NOT NULL,
    PRIMARY KEY (username, address)
);
