-- Fragment: now on the server's clock, in ms since the epoch.
floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
