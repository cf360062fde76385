-- The batch's first lock: position ?, token ?, ttl ? ms and ?
-- s{{session}} (session mode: its key ? and session ?).
SELECT ? AS i, CONVERT(? USING ascii) AS tok, ? AS ms, ? AS s{{session}}
