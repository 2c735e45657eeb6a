-- Who a visitor on the customer channel said they are. Unverified: such a
-- conversation has no customer (customer_id) until a person on staff links
-- one, so a typed email never opens another customer's orders or memory.
ALTER TABLE conversations ADD COLUMN contact_name TEXT;
ALTER TABLE conversations ADD COLUMN contact_email TEXT;
ALTER TABLE conversations ADD COLUMN contact_lang TEXT;
