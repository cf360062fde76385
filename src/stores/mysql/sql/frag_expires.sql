-- A fragment ({{expires}}): the expiry of a row in server ms.  Ours carry
-- expires_ms; rows of its-mieger's library only created + ttl, which that
-- library considers obsolete once unix_timestamp() exceeds it.
COALESCE(expires_ms, (created + ttl + 1) * 1000)
