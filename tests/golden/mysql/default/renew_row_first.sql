SELECT ? AS i, CONVERT(? USING ascii) AS tok, ? AS ms, ? AS s, ? AS k, ? AS cid
