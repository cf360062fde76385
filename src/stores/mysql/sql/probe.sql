-- dlock check (dlock_store_probe(), probe.c): the server's clock in ms
-- since the epoch.
SELECT {{nowms}}
